import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { promisify } from 'node:util'
import openapiTS, { astToString } from 'openapi-typescript'
import { buildTestApp, type TestApp } from './helper.ts'
import { ROOT } from './process-helper.ts'
import { before } from './support/hooks.ts'

const run = promisify(execFile)

// A client author's program, unchanged: types generated from /openapi.json, calls through openapi-fetch.
const CLIENT = `import createClient from 'openapi-fetch'
import type { paths } from './schema.d.ts'

const client = createClient<paths>({ baseUrl: process.env.BASE!, headers: { authorization: process.env.AUTH! } })
const created = await client.POST('/orders', { body: { customer_email: 'typed@example.com', items: [{ sku: 'T-1', quantity: 2 }] } })
if (created.data === undefined) throw new Error('create failed: ' + JSON.stringify(created.error))
const id: number = created.data.id
const listed = await client.GET('/orders', { params: { query: { limit: 10, include: 'items' } } })
const read = await client.GET('/orders/{order_id}', { params: { path: { order_id: id } } })
const cancelled = await client.POST('/orders/{order_id}/cancel', { params: { path: { order_id: id } } })
const status: 'PROCESSING' | 'CANCELLED' | undefined = cancelled.data?.status
console.log(JSON.stringify({ id, listed: listed.data?.map(o => o.id), read: read.data?.customer_email, status }))
`

describe('a client generated from /openapi.json', () => {
  let t: TestApp
  let dir: string
  let base: string
  before(async () => {
    t = await buildTestApp('sqlite')
    base = await t.app.listen({ port: 0, host: '127.0.0.1' })
    // Inside the project, so the client resolves openapi-fetch from its node_modules.
    fs.mkdirSync(path.join(ROOT, '.cache'), { recursive: true })
    dir = fs.mkdtempSync(path.join(ROOT, '.cache', 'typed-client-'))
  })
  after(async () => {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('type-checks under tsc --strict and creates, lists, reads and cancels an order', async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as Parameters<typeof openapiTS>[0]
    fs.writeFileSync(path.join(dir, 'schema.d.ts'), astToString(await openapiTS(doc)))
    fs.writeFileSync(path.join(dir, 'client.ts'), CLIENT)
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
    await run(process.execPath, [tsc, '--strict', '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
      '--allowImportingTsExtensions', '--types', 'node', path.join(dir, 'client.ts')], { cwd: ROOT }).catch((err: { stdout?: string }) => {
      assert.fail(`tsc --strict failed:\n${err.stdout ?? String(err)}`)
    })
    const auth = `Bearer ${await t.token('typed', ['orders:write'])}`
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(dir, 'client.ts')], { cwd: ROOT, env: { ...process.env, BASE: base, AUTH: auth } })
    const out = JSON.parse(stdout) as { id: number, listed: number[], read: string, status: string }
    assert.deepEqual(out.listed, [out.id])
    assert.equal(out.read, 'typed@example.com')
    assert.equal(out.status, 'CANCELLED')
  })
})
