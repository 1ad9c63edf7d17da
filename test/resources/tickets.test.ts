import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { renderErrorsDoc } from '../../scripts/gen-errors-doc.ts'
import { runCli } from '../../src/cli/commands.ts'
import { ConfigError } from '../../src/config.ts'
import { catalogueOf, loadConfig } from '../../src/context.ts'
import { RESOURCES } from '../../src/registry.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { ticketsResource } from '../fixtures/tickets/index.ts'
import { buildTestApp, freshDatabase, json, type TestApp } from '../helper.ts'
import { before } from '../support/hooks.ts'

// The one line a new resource adds to src/registry.ts, here beside the registry's own.
const resources = [...RESOURCES, ticketsResource]

/** Runs a CLI command in this process, with what it writes to stdout and stderr. */
async function cli (args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number, out: string }> {
  let out = ''
  const writes = { stdout: process.stdout.write, stderr: process.stderr.write }
  for (const name of ['stdout', 'stderr'] as const) {
    // The test runner reports through stdout too (in Buffers): those pass through.
    process[name].write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (typeof chunk !== 'string') return (writes[name] as (...a: unknown[]) => boolean).call(process[name], chunk, ...rest)
      out += chunk
      return true
    }) as never
  }
  try {
    return { code: await runCli(args, { env, resources }), out }
  } finally {
    process.stdout.write = writes.stdout
    process.stderr.write = writes.stderr
  }
}

describe('a new resource is its folder plus one registry line (test/fixtures/tickets)', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite', {}, { resources }) })

  it('is served: its routes, its scope, its problem code', async () => {
    const made = await t.request({ method: 'POST', url: '/tickets', headers: await t.auth('alice', ['tickets:write']), payload: { subject: 'printer' } })
    assert.equal(made.statusCode, 201)
    assert.equal(json(made).subject, 'printer')
    const read = await t.request({ method: 'GET', url: `/v2/tickets/${json(made).id as number}`, headers: await t.auth('alice', ['tickets:write']) })
    assert.equal(read.statusCode, 200)
    assert.equal(json(read).ticketId, json(made).id, 'versioned like every resource')
    const missing = await t.request({ method: 'GET', url: '/tickets/999', headers: await t.auth('alice', ['tickets:write']) })
    assert.equal(missing.statusCode, 404)
    assert.equal(json(missing).code, 'TICKET_NOT_FOUND')
    const refused = await t.request({ method: 'POST', url: '/tickets', headers: await t.auth('alice', ['posts:write']), payload: { subject: 'x' } })
    assert.equal(refused.statusCode, 403)
  })

  it('has its table made by its own migration, named after it', async () => {
    const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute((t.store as KyselyStore).db)
    assert.ok(rows.some(r => r.name === 'tickets/0001-tickets'))
  })

  it('is in the OpenAPI document, and its code in the catalogue and docs/errors.md', async () => {
    const doc = json(await t.request({ method: 'GET', url: '/openapi.json' }))
    assert.ok(doc.paths['/tickets'] !== undefined && doc.paths['/v2/tickets/{ticket_id}'] !== undefined)
    assert.ok(doc.tags.some((tag: { name: string }) => tag.name === 'tickets'))
    const catalogue = catalogueOf([...RESOURCES, ticketsResource])
    assert.equal(catalogue.problems.TICKET_NOT_FOUND.status, 404)
    assert.ok(renderErrorsDoc(catalogue).includes('| `TICKET_NOT_FOUND` | 404 |'))
    assert.ok(!renderErrorsDoc().includes('TICKET_NOT_FOUND'), 'only where the fixture is composed')
  })

  it('reads its setting with the core\'s: its default, a good value, and a bad one refused at start-up', async () => {
    const made = await t.request({ method: 'POST', url: '/tickets', headers: await t.auth('alice', ['tickets:write']), payload: { subject: 'toner' } })
    assert.equal(json(made).status, 'OPEN', 'TICKETS_INITIAL_STATUS unset')
    assert.equal(loadConfig({ TICKETS_INITIAL_STATUS: 'TRIAGE' }, resources).tickets?.initialStatus, 'TRIAGE')
    assert.equal(loadConfig({ TICKETS_INITIAL_STATUS: 'TRIAGE' }).tickets, undefined, 'the registry alone has no tickets section')
    assert.throws(() => loadConfig({ TICKETS_INITIAL_STATUS: 'open' }, resources), (err: unknown) => err instanceof ConfigError && err.setting === 'TICKETS_INITIAL_STATUS' && /must be one of OPEN, TRIAGE, got "open"/.test(err.message))
    const triage = await buildTestApp('sqlite', { TICKETS_INITIAL_STATUS: 'TRIAGE' }, { resources })
    const res = await triage.request({ method: 'POST', url: '/tickets', headers: await triage.auth('alice', ['tickets:write']), payload: { subject: 'fax' } })
    assert.equal(res.statusCode, 201)
    assert.equal(json(res).status, 'TRIAGE')
  })

  it('gives the CLI its scope', async () => {
    const db = await freshDatabase('sqlite')
    try {
      const env = { DATABASE_URL: db.url, DATA_DIR: db.dataDir, LOG_LEVEL: 'silent' }
      assert.match((await cli(['--help'], env)).out, /scopes: posts:write orders:write media:write tickets:write admin/)
      const made = await cli(['keys', 'create', '--name', 'desk', '--scopes', 'tickets:write'], env)
      assert.equal(made.code, 0, made.out)
      assert.match(made.out, /^blog_/)
      const refused = await cli(['keys', 'list'], { ...env, TICKETS_INITIAL_STATUS: 'LATER' })
      assert.equal(refused.code, 2, 'a bad value of its setting stops start-up')
      assert.match(refused.out, /bad setting TICKETS_INITIAL_STATUS: must be one of OPEN, TRIAGE/)
    } finally {
      await db.drop()
    }
  })
})
