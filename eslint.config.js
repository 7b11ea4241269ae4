import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, lowest first: a folder's code imports only from its own layer and the ones
 * before it, never from one after it (tests may reach up to check a layer against its users).
 */
const LAYERS = [
  'log',
  'base',
  'ports',
  'kube',
  'engine',
  'certs',
  'config',
  'trust',
  'registry',
  'node',
  'watch',
  'hub',
  'steps',
  'factory',
  'fleet',
  'support',
  'cli',
];
// a new folder takes its place in the list before it can be linted
const unplaced = readdirSync(new URL('./src/', import.meta.url), { withFileTypes: true })
  .filter((e) => e.isDirectory() && e.name !== 'bundle' && !LAYERS.includes(e.name))
  .map((e) => `src/${e.name}`);
if (unplaced.length) throw new Error(`${unplaced.join(', ')}: not in LAYERS in eslint.config.js`);
const layering = LAYERS.slice(0, -1).map((layer, i) => ({
  files: [`src/${layer}/**/*.ts`],
  ignores: ['**/*.test.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: LAYERS.slice(i + 1).map((above) => ({
          group: [`**/${above}/**`],
          message: `src/${layer} is below src/${above} (LAYERS in eslint.config.js): move what is shared down, or the caller up`,
        })),
      },
    ],
  },
}));

/**
 * The models of OpenShift components (test/cluster/models, the machine-config daemon's, the
 * kube-apiserver operator's client CAs) are the oracles the agent is tested against: they compute
 * what upstream computes with their own code, written from the upstream file they cite, so that
 * they can disagree with the agent. Of src/ they take types and the ports only.
 */
const MODELS = ['test/cluster/models/**/*.ts', 'test/cluster/apiserver-rollout.ts', 'test/e2e/mcd-model/**/*.ts'];
const modelsOwnCode = {
  files: MODELS,
  ignores: ['**/*.test.ts'],
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: ['**/src/**', '!**/src/ports/**'],
            allowTypeImports: true,
            message:
              "a model of an OpenShift component computes with its own code, written from the upstream file it cites, not the agent's (types and src/ports aside)",
          },
        ],
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.artifacts/'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  prettier,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      eqeqeq: ['error', 'always'],
      // with noUncheckedIndexedAccess, a checked index is asserted rather than re-tested
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Prettier wraps code at 120 columns but leaves long strings and comments alone: this checks them
      'max-len': [
        'error',
        { code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
    },
  },
  ...layering,
  modelsOwnCode,
  // CommonJS stand-ins the bundler puts in place of optional native modules
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
);
