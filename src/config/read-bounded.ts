/**
 * The one way a file from a site-config folder is read: links resolved and, given the folder,
 * confined to it; a regular file only (never a device, FIFO or folder); its size checked before a
 * byte is read, and never more than the limit read even if the file grows meanwhile.
 */
import { constants } from 'node:fs';
import { open, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { DocumentError, MAX_DOCUMENT_BYTES } from './yaml.js';

export interface BoundedReadOptions {
  /** a resolved folder (realpath) the file must resolve inside */
  inside?: string;
  /** the most bytes accepted; MAX_DOCUMENT_BYTES unless given */
  limit?: number;
}

/** Whether `real` (a resolved path) lies inside the resolved folder `inside`. */
export function isInside(real: string, inside: string): boolean {
  const relative = path.relative(inside, real);
  return relative !== '' && relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** Reads a bounded regular file; `inside` confines symlinks. Problems throw DocumentError naming `shownAs`. */
export async function readBounded(file: string, shownAs: string, options: BoundedReadOptions = {}): Promise<Buffer> {
  const limit = options.limit ?? MAX_DOCUMENT_BYTES;
  let real: string;
  try {
    real = await realpath(file);
  } catch {
    throw new DocumentError(`${shownAs}: no such file`);
  }
  if (options.inside !== undefined && !isInside(real, options.inside))
    throw new DocumentError(`${shownAs}: resolves outside the site-config folder (symlink)`);
  // stat before open: opening a FIFO would block, a device would never end
  const info = await stat(real).catch(() => undefined);
  if (!info) throw new DocumentError(`${shownAs}: no such file`);
  if (!info.isFile()) throw new DocumentError(`${shownAs}: not a regular file`);
  if (info.size > limit) throw new DocumentError(`${shownAs}: ${info.size} bytes; the limit is ${limit}`);
  let handle;
  try {
    // no link followed and no blocking, should the path have been swapped since the checks above
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw new DocumentError(`${shownAs}: cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw new DocumentError(`${shownAs}: not a regular file`);
    if (opened.size > limit) throw new DocumentError(`${shownAs}: ${opened.size} bytes; the limit is ${limit}`);
    // one byte more than its size tells a file that grew after the check
    const buffer = Buffer.alloc(opened.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > opened.size) throw new DocumentError(`${shownAs}: changed while being read`);
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}
