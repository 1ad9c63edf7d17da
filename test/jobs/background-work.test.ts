import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Webhook } from 'standardwebhooks'
import { loadConfig } from '../../src/context.ts'
import { freshDatabase, storeKinds } from '../helper.ts'
import { type Instance, processEnv, startInstance, stop, token } from '../process-helper.ts'
import { receiver } from '../support/receiver.ts'
import { until } from '../support/poll.ts'

const ENV = {
  WEBHOOK_ALLOW_LOOPBACK: '1',
  WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 3).toString('base64')}`,
  EVENTS_POLL_MS: '20',
  EXPORT_POLL_MS: '20',
  SCHEDULE_RESCAN_MS: '100',
}

describe('the BACKGROUND_WORK setting', () => {
  it('is on by default, takes true or false, and stops start-up naming it otherwise', () => {
    assert.equal(loadConfig({}).backgroundWork, true)
    assert.equal(loadConfig({ BACKGROUND_WORK: 'false' }).backgroundWork, false)
    assert.equal(loadConfig({ BACKGROUND_WORK: 'true' }).backgroundWork, true)
    assert.throws(() => loadConfig({ BACKGROUND_WORK: 'sometimes' }), /BACKGROUND_WORK/)
  })
})

for (const kind of await storeKinds()) {
  // Processes, as deployed: two stores of one SQLite file in one process would wait on each other's
  // write lock with the event loop blocked.
  describe(`an API instance without background work, and a worker beside it [${kind}]`, () => {
    let db: Awaited<ReturnType<typeof freshDatabase>>
    let api: Instance | null = null
    let worker: Instance | null = null
    let rx: Awaited<ReturnType<typeof receiver>>
    before(async () => {
      db = await freshDatabase(kind)
      rx = await receiver()
      api = await startInstance('api', processEnv(db, { ...ENV, BACKGROUND_WORK: 'false' }))
    })
    after(async () => {
      // Everything is stopped and closed even when a start failed, so nothing keeps the file running.
      const codes = await Promise.all([worker, api].map(async i => i === null ? 0 : await stop(i)))
      await rx.close()
      await db.drop()
      assert.deepEqual(codes, [0, 0], [worker, api].map(i => i?.output.join('') ?? '').join('\n'))
    })

    it('leaves deliveries and scheduled posts to the worker, which sends and publishes what the API instance recorded', async () => {
      const as = async (who: string, scopes: string[]) => ({ authorization: `Bearer ${await token(who, scopes)}`, 'content-type': 'application/json' })
      const admin = await as('root', ['admin'])
      const writer = await as('alice', ['posts:write'])
      const { base } = api ?? assert.fail('the API instance did not start')
      const call = async (method: string, url: string, headers: Record<string, string>, body?: object) => {
        const res = await fetch(`${base}${url}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
        assert.ok(res.ok, `${method} ${url}: ${res.status} ${await res.clone().text()}`)
        return await res.json() as any
      }
      const sub = await call('POST', '/webhooks', admin, { url: `${rx.base}/ok`, events: ['post.created'] })
      const post = await call('POST', '/posts', writer, { title: 'Made on the API', content: 'x' })
      const scheduled = await call('POST', '/posts', writer, { title: 'Later', content: 'x', status: 'scheduled', publish_at: new Date(Date.now() + 300).toISOString() })
      const statusOf = async (id: number) => (await call('GET', `/posts/${id}`, writer)).status as string

      // Many polls' worth of time: the API instance fans out, sends and publishes nothing. Real time
      // on purpose: it is a process on the machine's clock, and what must not happen gives no sign to wait for.
      await sleep(1500)
      assert.equal(rx.got.length, 0)
      assert.deepEqual(await call('GET', `/webhooks/${sub.id}/deliveries`, admin), [])
      assert.equal(await statusOf(scheduled.id), 'scheduled')

      // A second instance on the same database, with the work on (the default), takes it up.
      worker = await startInstance('worker', processEnv(db, ENV))
      await until(() => rx.got.length > 0, 'the worker\'s delivery', 30_000)
      const got = rx.got[0]!
      const event = new Webhook(sub.secret).verify(got.body, Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map(h => [h, String(got.headers[h])]))) as { type: string, data: { id: number } }
      assert.deepEqual([event.type, event.data.id], ['post.created', post.id])
      await until(async () => await statusOf(scheduled.id) === 'published', 'the worker publishing the scheduled post', 30_000)
    })
  })
}
