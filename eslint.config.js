import fs from 'node:fs'
import neostandard from 'neostandard'

/**
 * The layers of src/, lowest first: a module imports only from its own layer or lower ones
 * (STYLE.md: config/errors ← domain ← store ← jobs ← http ← resources ← registry ← app ← server/cli).
 */
const LAYERS = [
  ['./src/config.ts', './src/errors.ts', './src/errors-i18n.ts', './src/messages.ts', './src/catalogue.ts', './src/loop-stalls.ts', './src/clock.ts', './src/load-once.ts'],
  ['./src/domain'],
  ['./src/store', './src/storage'],
  ['./src/jobs'],
  // src/http/ in rooms, each importing only those below it: the words every request and answer
  // share, the hooks a request passes, what a handler calls, what a part declares and is given.
  ['./src/http/protocol'],
  ['./src/http/pipeline'],
  ['./src/http/toolkit'],
  ['./src/http/contract'],
  ['./src/resources', './src/facilities', './src/routes'],
  ['./src/registry.ts'],
  ['./src/context.ts', './src/app.ts'],
  // The reading site: a face beside the API's, built from the same context.
  ['./src/site'],
  ['./src/server.ts', './src/cli'],
]
const upward = LAYERS.slice(0, -1).map((target, i) => ({
  target,
  from: LAYERS.slice(i + 1).flat(),
  message: 'Layers import downward only (eslint.config.js LAYERS).',
}))
// No resource imports another: what two share lives in the core.
const resources = fs.readdirSync(new URL('./src/resources', import.meta.url), { withFileTypes: true }).filter(d => d.isDirectory()).map(d => ({
  target: `./src/resources/${d.name}`,
  from: './src/resources',
  except: [`./${d.name}`],
  message: 'A resource imports no other resource; move what they share into the core.',
}))

// A resource has one face too: the facilities, the core's routes and what lies above (the registry) import its index.ts, never a file inside.
const resourceFaces = fs.readdirSync(new URL('./src/resources', import.meta.url), { withFileTypes: true }).filter(d => d.isDirectory()).map(d => ({
  target: ['./src/facilities', './src/routes', ...LAYERS.slice(LAYERS.findIndex(l => l.includes('./src/registry.ts'))).flat()],
  from: `./src/resources/${d.name}`,
  except: ['./index.ts'],
  message: 'A resource is imported through its index.ts.',
}))

// A facility has one face: what lies above it imports its index.ts, never a file inside.
const facilities = fs.readdirSync(new URL('./src/facilities', import.meta.url), { withFileTypes: true }).filter(d => d.isDirectory()).map(d => ({
  target: LAYERS.slice(LAYERS.findIndex(l => l.includes('./src/facilities'))).flat().filter(t => t !== './src/facilities'),
  from: `./src/facilities/${d.name}`,
  except: ['./index.ts'],
  message: 'A facility is imported through its index.ts.',
}))

export default [
  ...neostandard({ ts: true, ignores: ['node_modules/**', 'data/**', 'coverage/**', 'dist/**', '.ci/node24/**'] }),
  {
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: [...upward, ...resources, ...resourceFaces, ...facilities] }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
]
