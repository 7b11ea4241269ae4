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

/** A file as the host holds it: what a step's survey keeps for its plan. */
export interface HostFile {
  content: string;
  mode: number;
  /** read only when running as root, the only case in which the agent can set them */
  uid?: number;
  gid?: number;
}

/** The file at `filePath` as the host holds it; undefined when there is none. */
export async function readHostFile(
  fs: RootFs,
  filePath: string,
  userFolder?: FolderOwner,
): Promise<HostFile | undefined> {
  const content = userFolder ? await fs.readUserFile(filePath, userFolder) : await fs.readText(filePath);
  if (content === undefined) return undefined;
  const mode = (await fs.mode(filePath))! & 0o7777;
  if (!runningAsRoot()) return { content, mode };
  const info = await stat(fs.resolve(filePath));
  return { content, mode, uid: info.uid, gid: info.gid };
}

/** What is wrong with the file the host holds, as short reasons; empty when it is as it should be. */
export function fileDrift(have: HostFile | undefined, file: ManagedFile): { exists: boolean; reasons: string[] } {
  if (have === undefined) return { exists: false, reasons: ['missing'] };
  const reasons: string[] = [];
  if (have.content !== file.content) reasons.push('content differs');
  if (have.mode !== file.mode) reasons.push(`mode ${octal(have.mode)}, want ${octal(file.mode)}`);
  if (file.uid !== undefined && have.uid !== undefined && (have.uid !== file.uid || have.gid !== file.gid))
    reasons.push(`owner ${have.uid}:${have.gid}, want ${file.uid}:${file.gid}`);
  return { exists: true, reasons };
}

/** The plan entry for a file that differs from what it should hold, or undefined when it does not. */
export function fileChange(have: HostFile | undefined, file: ManagedFile, summary: string): Change | undefined {
  const drift = fileDrift(have, file);
  if (drift.reasons.length === 0) return undefined;
  const showDiff = file.showDiff ?? true;
  return {
    action: drift.exists ? 'update' : 'create',
    target: file.path,
    summary: drift.exists ? `${summary} (${drift.reasons.join('; ')})` : `${summary} (mode ${octal(file.mode)})`,
    ...(showDiff && have?.content !== file.content && { diff: lineDiff(have?.content ?? '', file.content) }),
  };
}

export async function writeManagedFile(fs: RootFs, file: ManagedFile): Promise<void> {
  await fs.writeAtomic(file.path, file.content, {
    mode: file.mode,
    ...(file.uid !== undefined && file.gid !== undefined && { uid: file.uid, gid: file.gid }),
  });
}

/** Each of the files as the host holds it, by path (absent: no such file). */
export async function readHostFiles(fs: RootFs, paths: readonly string[]): Promise<Record<string, HostFile>> {
  const out: Record<string, HostFile> = {};
  for (const filePath of paths) {
    const file = await readHostFile(fs, filePath);
    if (file) out[filePath] = file;
  }
  return out;
}
