// Typed linting: no floating promises, no `any` leaking through module boundaries.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Only the hardware layer loads native bindings.
const NATIVE = [
  { name: 'koffi', message: 'Only src/devices/ may load koffi.' },
  { name: 'webgpu', message: 'Only src/devices/ may load webgpu.' },
];

// The layers of docs/architecture.md, bottom-up: a file in src/<layer>/ may import its own layer and
// lower ones, never a higher one (test/core/layering.test.ts checks the resolved graph and cycles too).
const LAYERS = [
  'core',
  'devices',
  'memory',
  'kernels',
  'obs',
  'runtime',
  'workloads',
  'nn',
  'onnx',
  'service',
  'agent',
  'cli',
];
const layerRules = LAYERS.slice(0, -1).map((layer, i) => {
  const above = LAYERS.slice(i + 1);
  return {
    files: [`src/${layer}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          ...(layer === 'devices' ? {} : { paths: NATIVE }),
          patterns: [
            {
              // A relative path that climbs out to src/ and into a higher layer ('../../kernels/x.js').
              regex: `^(\\.\\./)+(${above.join('|')})/`,
              message: `src/${layer} sits below ${above.join(', ')} (docs/architecture.md): move the shared piece down or pass it in.`,
            },
          ],
        },
      ],
    },
  };
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'web/dist/**', 'scratch/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's test()/describe() return promises the runner itself tracks.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['test', 'it', 'describe', 'suite'], package: 'node:test' },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/explicit-module-boundary-types': 'off',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  ...layerRules,
  {
    files: ['src/cli/**/*.ts', 'src/index.ts', 'src/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: NATIVE }] },
  },
);
