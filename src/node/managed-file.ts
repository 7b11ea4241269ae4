/**
 * Host files a node step owns as a whole: whether one differs from what it should hold (content,
 * mode, owner) as a plan Change, and writing it atomically.
 */
import { stat } from 'node:fs/promises';
import type { Change } from '../engine/step.js';
import type { FolderOwner, RootFs } from '../ports/fs.js';

export interface ManagedFile {
  path: string;
  content: string;
  mode: number;
  /** owner to set; only a process running as root can */
  uid?: number;
  gid?: number;
  /** when false the plan names the change without showing the lines (the content is a secret) */
  showDiff?: boolean;
  /** the file lies in a folder this user controls: read without following links, see RootFs.readUserFile */
  userFolder?: FolderOwner;
}

const octal = (mode: number) => `0${(mode & 0o7777).toString(8)}`;
const runningAsRoot = () => process.getuid?.() === 0;

/** Lines only in `before` as `- line`, lines only in `after` as `+ line`, in order (longest common subsequence). */
export function lineDiff(before: string, after: string): string[] {
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const b = after === '' ? [] : after.replace(/\n$/, '').split('\n');
  const common: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      common[i]![j] = a[i] === b[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++;
      j++;
    } else if (j < b.length && (i === a.length || common[i]![j + 1]! > common[i + 1]![j]!)) out.push(`+ ${b[j++]}`);
    else out.push(`- ${a[i++]}`);
  }
  return out;
}

/** What is wrong with the file on the host, as short reasons; empty when it is as it should be. */
export async function fileDrift(
  fs: RootFs,
  file: ManagedFile,
): Promise<{ exists: boolean; reasons: string[]; current?: string }> {
  const current = file.userFolder ? await fs.readUserFile(file.path, file.userFolder) : await fs.readText(file.path);
  if (current === undefined) return { exists: false, reasons: ['missing'] };
  const reasons: string[] = [];
  if (current !== file.content) reasons.push('content differs');
  const mode = (await fs.mode(file.path))! & 0o7777;
  if (mode !== file.mode) reasons.push(`mode ${octal(mode)}, want ${octal(file.mode)}`);
  if (file.uid !== undefined && runningAsRoot()) {
    const info = await stat(fs.resolve(file.path));
    if (info.uid !== file.uid || info.gid !== file.gid)
      reasons.push(`owner ${info.uid}:${info.gid}, want ${file.uid}:${file.gid}`);
  }
  return { exists: true, reasons, current };
}

/** The plan entry for a file that differs from what it should hold, or undefined when it does not. */
export async function planFile(fs: RootFs, file: ManagedFile, summary: string): Promise<Change | undefined> {
  const drift = await fileDrift(fs, file);
  if (drift.reasons.length === 0) return undefined;
  const showDiff = file.showDiff ?? true;
  return {
    action: drift.exists ? 'update' : 'create',
    target: file.path,
    summary: drift.exists ? `${summary} (${drift.reasons.join('; ')})` : `${summary} (mode ${octal(file.mode)})`,
    ...(showDiff && drift.current !== file.content && { diff: lineDiff(drift.current ?? '', file.content) }),
  };
}

export async function writeManagedFile(fs: RootFs, file: ManagedFile): Promise<void> {
  await fs.writeAtomic(file.path, file.content, {
    mode: file.mode,
    ...(file.uid !== undefined && file.gid !== undefined && { uid: file.uid, gid: file.gid }),
  });
}
