import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { writeOpenApi } from './write-openapi.ts'

/**
 * `npm run lint:api`: lints the OpenAPI document the service serves with Spectral's OpenAPI and
 * OWASP API Security rules (.spectral.yaml); any error fails. Everything runs from node_modules.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-lint-api-'))
const file = path.join(dir, 'openapi.json')
try {
  await writeOpenApi(file)
  const spectral = path.join(root, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js')
  const run = spawnSync(process.execPath, [spectral, 'lint', file, '--ruleset', path.join(root, '.spectral.yaml'), '--fail-severity', 'error', '--display-only-failures'], { stdio: 'inherit' })
  process.exitCode = run.status ?? 1
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
