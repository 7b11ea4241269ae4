import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BLOCK_BEGIN,
  BLOCK_END,
  describeKey,
  fingerprint,
  parseKeyLine,
  passwdEntry,
  renderAuthorizedKeys,
} from './authorized-keys.js';

const SITE = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN2MDNYgUAS0GPwsfH1wH03JkbZ7nJRPsI4u93oUxWLa support@store42';
const OTHER = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0dPb1uZ0d2H5oF4Jt2p0Q9m0cY3o3c8o7y9dJm3G8x ops@store42';
const FACTORY = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 factory@line-3';

describe('renderAuthorizedKeys', () => {
  it('keeps the lines it does not own and appends the site keys in a marked block', () => {
    const existing = `# factory\n${FACTORY}\n`;
    expect(renderAuthorizedKeys(existing, [SITE, OTHER])).toBe(
      `# factory\n${FACTORY}\n${BLOCK_BEGIN}\n${SITE}\n${OTHER}\n${BLOCK_END}\n`,
    );
  });

  it('rewrites only its block, keeps lines added after it, and is stable', () => {
    const first = renderAuthorizedKeys(`${FACTORY}\n`, [SITE]);
    const edited = `${first}from="10.0.0.0/8" ${OTHER}\n`;
    const second = renderAuthorizedKeys(edited, [SITE]);
    expect(second).toBe(`${FACTORY}\nfrom="10.0.0.0/8" ${OTHER}\n${BLOCK_BEGIN}\n${SITE}\n${BLOCK_END}\n`);
    expect(renderAuthorizedKeys(second, [SITE])).toBe(second);
  });

  it('never repeats a key, whatever its comment or options', () => {
    const existing = `command="/bin/true" ${SITE.replace('support@store42', 'added by hand')}\n`;
    expect(renderAuthorizedKeys(existing, [SITE, SITE, OTHER])).toBe(
      `${existing}${BLOCK_BEGIN}\n${OTHER}\n${BLOCK_END}\n`,
    );
  });

  it('drops its block when the site has no keys, and writes nothing into an empty file', () => {
    expect(renderAuthorizedKeys(renderAuthorizedKeys(`${FACTORY}\n`, [SITE]), [])).toBe(`${FACTORY}\n`);
    expect(renderAuthorizedKeys('', [])).toBe('');
  });
});

describe('keys', () => {
  it('reads the key past options and prints the fingerprint ssh-keygen prints', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'keys-'));
    writeFileSync(path.join(dir, 'k.pub'), `${SITE}\n`);
    const keygen = execFileSync('ssh-keygen', ['-l', '-f', path.join(dir, 'k.pub')], { encoding: 'utf8' }).split(
      ' ',
    )[1];
    const key = parseKeyLine(`no-pty,from="10.0.0.1" ${SITE}`)!;
    expect(fingerprint(key)).toBe(keygen);
    expect(describeKey(key)).toBe(`ssh-ed25519 ${keygen} support@store42`);
    expect(parseKeyLine('# comment')).toBeUndefined();
    expect(parseKeyLine('not a key')).toBeUndefined();
  });

  it('finds a user in /etc/passwd', () => {
    const passwd = 'root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1001:CoreOS Admin:/var/home/core:/bin/bash\n';
    expect(passwdEntry(passwd, 'core')).toEqual({ uid: 1000, gid: 1001, home: '/var/home/core' });
    expect(passwdEntry(passwd, 'nobody')).toBeUndefined();
  });
});
