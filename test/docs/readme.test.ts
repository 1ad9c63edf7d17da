import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { API_VERSIONS } from '../../src/http/protocol/versioning.ts'
import { RESOURCES } from '../../src/registry.ts'

const root = new URL('../../', import.meta.url)
const readme = fs.readFileSync(new URL('README.md', root), 'utf8')
/** The configuration table, kept in docs/ so that the README stays a front door. */
const configuration = fs.readFileSync(new URL('docs/configuration.md', root), 'utf8')
const configSource = fs.readFileSync(new URL('src/config.ts', root), 'utf8')

/** Every environment variable src/config.ts reads: quoted names, and the per-version templates. */
function settingsRead (): string[] {
  const names = new Set([...configSource.matchAll(/\(env, '([A-Z][A-Z0-9_]*)'/g)].map(m => m[1]!))
  for (const m of configSource.matchAll(/`(API_V)\$\{n\}(_[A-Z_]+)`/g)) {
    for (const v of API_VERSIONS) names.add(`${m[1]!}${v}${m[2]!}`)
  }
  return [...names].sort()
}

describe('README.md', () => {
  it('is a front door: at most 260 lines, the rest in docs/', () => {
    assert.ok(readme.split('\n').length <= 260, `${readme.split('\n').length} lines`)
  })

  it('documents, in docs/configuration.md, every setting src/config.ts reads', () => {
    const settings = settingsRead()
    assert.ok(settings.length >= 20 && settings.includes('PORT') && settings.includes('API_V2_SUNSET_AT'), `settings were found: ${settings.join(' ')}`)
    const rows = configuration.split('\n').filter(l => l.startsWith('| `'))
    const missing = settings.filter(name => !rows.some(row => row.split('|')[1]!.includes(`\`${name}\``)))
    assert.deepEqual(missing, [])
  })

  it('has the row each resource declares for each of its settings, as it declares it', () => {
    const declared = RESOURCES.flatMap(r => r.settings?.rows ?? [])
    assert.ok(declared.some(row => row.name === 'REVISIONS_KEEP'), 'the registry\'s resources declare settings')
    const rows = configuration.split('\n')
    for (const row of declared) {
      assert.ok(rows.includes(`| \`${row.name}\` | \`${row.default}\` | ${row.description} |`), `docs/configuration.md has no row for ${row.name} as ${row.name}'s resource declares it`)
    }
  })

  it('gives the set-up commands for running and for testing', () => {
    assert.ok(readme.includes('npm ci && npm start'))
    assert.ok(readme.includes('sh scripts/install-browser.sh && npm ci && npm run check'))
  })

  it('links only to docs that exist', () => {
    for (const m of readme.matchAll(/\]\((docs\/[^)]+)\)/g)) assert.ok(fs.existsSync(new URL(m[1]!, root)), m[1])
  })
})
