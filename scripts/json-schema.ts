/**
 * Prints the site-config v1 JSON Schema, generated from the zod schema, for editors. Unknown keys
 * are warnings to the agent, not errors, so the schema does not forbid them either.
 */
import { z } from 'zod';
import { siteConfigSchema } from '../src/config/v1/schema.js';

const schema = {
  ...z.toJSONSchema(siteConfigSchema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      if (ctx.jsonSchema.additionalProperties === false) delete ctx.jsonSchema.additionalProperties;
    },
  }),
  $id: 'https://sno-relocate.example/site-config.v1.schema.json',
  title: 'sno-relocate site-config v1',
};
process.stdout.write(`${JSON.stringify(schema, null, 2)}\n`);
