import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { writeOpenApi } from './write-openapi.ts'

/**
 * `npm run lint:api`: lints the OpenAPI document the service serves with Spectral's OpenAPI and
 * OWASP API Security rules (.spectral.yaml); any error fails. Everything runs from node_modules.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// Inside the project, so that the ruleset's per-path overrides (globs beside .spectral.yaml) reach it.
const dir = fs.mkdtempSync(path.join(root, 'lint-api-'))
const file = path.join(dir, 'openapi.json')
try {
  await writeOpenApi(file)
  const spectral = path.join(root, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js')
  const run = spawnSync(process.execPath, [spectral, 'lint', file, '--ruleset', path.join(root, '.spectral.yaml'), '--fail-severity', 'error', '--display-only-failures'], { stdio: 'inherit' })
  process.exitCode = run.status ?? 1
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
