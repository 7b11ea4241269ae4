/** Prints the site-config v1 JSON Schema, generated from the zod schema, for editors. */
import { z } from 'zod';
import { siteConfigSchema } from '../src/config/v1/schema.js';

const schema = {
  ...z.toJSONSchema(siteConfigSchema, { io: 'input', unrepresentable: 'any' }),
  $id: 'https://sno-relocate.example/site-config.v1.schema.json',
  title: 'sno-relocate site-config v1',
};
process.stdout.write(`${JSON.stringify(schema, null, 2)}\n`);
