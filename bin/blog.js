#!/usr/bin/env node
// The command line. Runs the compiled and bundled JavaScript, dist/blog.js (built by `npm run
// build`, which `npm ci` runs through `prepare`); from a checkout without it, the TypeScript
// sources through tsx's loader.
import fs from 'node:fs'

const compiled = new URL('../dist/blog.js', import.meta.url)
if (fs.existsSync(compiled)) {
  await import(compiled.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/cli/main.ts')
}
