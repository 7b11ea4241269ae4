/** The JSON Schema build.sh ships for editors (dist/site-config.v1.schema.json). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/cli.js';

const FILE = path.join(REPO, 'dist/site-config.v1.schema.json');

describe('site-config JSON Schema', () => {
  it.skipIf(!existsSync(FILE))('names the required fields and, like the agent, does not reject unknown keys', () => {
    const schema = JSON.parse(readFileSync(FILE, 'utf8')) as {
      required: string[];
      properties: Record<string, { required?: string[] }>;
    };
    expect(schema.required).toEqual(expect.arrayContaining(['apiVersion', 'kind', 'metadata', 'spec']));
    expect(schema.properties.spec?.required).toEqual(expect.arrayContaining(['baseDomain', 'network']));
    // an editor would mark an unknown key as an error; the agent only warns about one
    expect(JSON.stringify(schema)).not.toContain('"additionalProperties":false');
  });
});
