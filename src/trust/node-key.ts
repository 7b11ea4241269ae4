/**
 * The node's key: an age X25519 identity made by `factory prepare`, kept on the node only as a
 * systemd credential (`systemd-creds encrypt`), sealed to the node's TPM2 where it has one and to
 * the host key (/var/lib/systemd/credential.secret) otherwise, so that the credential file copied
 * to another machine opens nowhere else. Its public part (the age recipient) is kept beside it in
 * /etc/sno-relocate/node-key.json, printed by prepare for the fleet inventory, and reported by
 * `factory check`.
 *
 * At admission the agent unseals the identity once, on the first sealed value it meets, opens the
 * values in memory, and drops the identity when admission is over (src/config/admit.ts).
 */
import { Decrypter, generateX25519Identity, identityToRecipient } from 'age-encryption';
import * as z from 'zod';
import { RefusedError } from '../base/errors.js';
import type { Unsealer } from '../config/sealed.js';
import type { Exec, ExecOptions } from '../ports/exec.js';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import { nodeIdentity } from './check.js';
import { decodeSealed, SealedFormatError } from './sealed-format.js';

export const NODE_KEY_CREDENTIAL = '/etc/sno-relocate/node-key.cred';
export const NODE_KEY_RECORD = '/etc/sno-relocate/node-key.json';
/** the credential's name, bound into it by systemd-creds: a credential renamed is refused */
const CREDENTIAL_NAME = 'sno-relocate-node-key';
/** systemd's host key; under --root, the root's own (systemd-creds reads $SYSTEMD_CREDENTIAL_SECRET) */
const HOST_KEY = '/var/lib/systemd/credential.secret';

/** systemd-creds run against the host key of the root the agent works on */
const creds = (ctx: NodeKeyContext, args: string[], options: ExecOptions = {}) =>
  ctx.exec.run('systemd-creds', args, { ...options, env: { SYSTEMD_CREDENTIAL_SECRET: ctx.fs.resolve(HOST_KEY) } });

/** an age X25519 recipient: age1 and 58 bech32 characters */
export const AGE_RECIPIENT = /^age1[02-9ac-hj-np-z]{58}$/;

export const sealingSchema = z.enum(['tpm2', 'host']);
export type KeySealing = z.infer<typeof sealingSchema>;

const nodeKeySchema = z.strictObject({
  version: z.literal(1),
  /** the age recipient site secrets are sealed to */
  recipient: z.string().regex(AGE_RECIPIENT),
  /** what the credential is sealed with */
  sealing: sealingSchema,
  madeAt: z.iso.datetime(),
});
export type NodeKey = z.infer<typeof nodeKeySchema>;

export interface NodeKeyContext {
  fs: RootFs;
  exec: Exec;
}

export async function readNodeKey(fs: RootFs): Promise<NodeKey | undefined> {
  return readJsonFile(fs, NODE_KEY_RECORD, {
    what: 'node key record',
    schema: nodeKeySchema,
    advice: 'run factory prepare again',
  });
}

/**
 * Whether systemd-creds can seal to a TPM2 here: the kernel has a TPM2 device (`+driver` in
 * `systemd-creds has-tpm2`). Full support (exit 0) also asks for UEFI firmware that measured the
 * boot, which a node booted by a BIOS lacks while its TPM2 still seals.
 */
async function hasTpm2(ctx: NodeKeyContext): Promise<boolean> {
  return /^\+driver$/m.test((await creds(ctx, ['has-tpm2'], { allowFailure: true })).stdout);
}

/**
 * Makes the node's key unless it has one whose credential still opens: an identity made once
 * stays, so sites already sealed to it keep opening. `requireTpm`: refuse to seal to the host key.
 */
export async function ensureNodeKey(ctx: NodeKeyContext, now: Date, requireTpm = false): Promise<NodeKey> {
  const existing = await readNodeKey(ctx.fs).catch(() => undefined);
  // a credential that no longer opens here (another machine's, a cleared TPM2) is replaced: nothing
  // sealed to it could be opened on this node anyway
  const unsealed = existing && (await ctx.fs.exists(NODE_KEY_CREDENTIAL)) ? await unsealIdentity(ctx) : undefined;
  const kept =
    typeof unsealed === 'object' &&
    (await identityToRecipient(unsealed.identity)) === existing?.recipient &&
    (!requireTpm || existing.sealing === 'tpm2');
  if (kept) return existing;
  const tpm = await hasTpm2(ctx);
  if (requireTpm && !tpm)
    throw new RefusedError(
      'the node key must be sealed to a TPM2, and this node has none systemd-creds can use (systemd-creds has-tpm2); nothing was changed',
    );
  const identity = await generateX25519Identity();
  const sealing: KeySealing = tpm ? 'tpm2' : 'host';
  await ctx.fs.mkdirp('/etc/sno-relocate', 0o755);
  // the identity goes through systemd-creds' standard input and output only; the credential is root's alone
  const credential = await creds(ctx, ['encrypt', `--name=${CREDENTIAL_NAME}`, `--with-key=${sealing}`, '-', '-'], {
    input: identity,
  });
  await ctx.fs.writeAtomic(NODE_KEY_CREDENTIAL, credential.stdout, { mode: 0o600 });
  const key: NodeKey = {
    version: 1,
    recipient: await identityToRecipient(identity),
    sealing,
    madeAt: now.toISOString(),
  };
  await ctx.fs.writeAtomic(NODE_KEY_RECORD, `${JSON.stringify(key, null, 2)}\n`, { mode: 0o644 });
  return key;
}

/**
 * The identity, out of its credential: only this machine (its TPM2 or host key) can do it. A string
 * is why it does not open here.
 */
async function unsealIdentity(ctx: NodeKeyContext): Promise<{ identity: string } | string> {
  const result = await creds(ctx, ['decrypt', `--name=${CREDENTIAL_NAME}`, ctx.fs.resolve(NODE_KEY_CREDENTIAL), '-'], {
    allowFailure: true,
  });
  if (result.code === 0) return { identity: result.stdout.trim() };
  return `the node key ${NODE_KEY_CREDENTIAL} does not open on this machine (systemd-creds: ${result.stderr.trim().split('\n').pop() ?? `exit ${result.code}`})`;
}

/** The identity for admission; a credential that does not open here refuses the site-config. */
async function admissionIdentity(ctx: NodeKeyContext): Promise<string> {
  const unsealed = await unsealIdentity(ctx);
  if (typeof unsealed === 'string')
    throw new RefusedError(`site-config refused: ${unsealed}; nothing on the host was changed`);
  return unsealed.identity;
}

/**
 * The node's unsealer, or undefined where there is no node key (a workstation, a node shipped
 * before node keys): sealed fields are then listed, not read, and a run refuses them.
 */
export async function nodeUnsealer(ctx: NodeKeyContext): Promise<Unsealer | undefined> {
  if (!(await ctx.fs.exists(NODE_KEY_CREDENTIAL))) return undefined;
  let identity: Promise<string> | undefined;
  let thisNode: Promise<string> | undefined;
  const nodeName = async () => {
    const { serial, machineId } = await nodeIdentity(ctx.fs);
    return serial ?? machineId ?? 'unknown';
  };
  return {
    async open(armored, field, sealedFor) {
      identity ??= admissionIdentity(ctx);
      const decrypter = new Decrypter();
      decrypter.addIdentity(await identity);
      try {
        return Buffer.from(await decrypter.decrypt(decodeSealed(armored)));
      } catch (err) {
        const why =
          err instanceof SealedFormatError
            ? err.message
            : /no identity matched/i.test((err as Error).message)
              ? `${sealedFor === 'unknown' ? "sealed for another node's key (the stick does not say which)" : `sealed for node ${sealedFor}`}, not for this node (${await (thisNode ??= nodeName())})`
              : `the sealed value is damaged (${(err as Error).message})`;
        throw new RefusedError(`site-config refused: ${field}: ${why}; nothing on the host was changed`);
      }
    },
    forget() {
      identity = undefined;
    },
  };
}
