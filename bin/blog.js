#!/usr/bin/env node
// The command line. Runs the compiled JavaScript in dist/ (built by `npm run build`, which
// `npm ci` runs through `prepare`); from a checkout without dist/, the TypeScript sources
// through tsx's loader.
import fs from 'node:fs'

const compiled = new URL('../dist/cli/main.js', import.meta.url)
if (fs.existsSync(compiled)) {
  await import(compiled.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/cli/main.ts')
}
