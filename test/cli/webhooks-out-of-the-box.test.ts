import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { processEnv, ROOT, startInstance, stop, token } from '../process-helper.ts'
import { receiver } from '../support/receiver.ts'
import { until } from '../support/poll.ts'

const START = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start

/**
 * What a new user does: `npm start` with nothing configured but a data folder, then a webhook
 * subscription, then a restart. The key that seals the subscription's secret is the service's to
 * make, so this works without WEBHOOK_SECRET and survives the restart.
 */
describe('npm start with the defaults: webhooks out of the box', () => {
  let dir: string
  let rx: Awaited<ReturnType<typeof receiver>>
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-webhooks-'))
    rx = await receiver()
  })
  after(async () => {
    await rx.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('answers POST /webhooks 201 with a secret, and after a restart its deliveries are still signed with it', async () => {
    // No DATABASE_URL (SQLite under DATA_DIR) and no WEBHOOK_SECRET.
    const env = processEnv({ url: '', dataDir: dir }, { WEBHOOK_ALLOW_LOOPBACK: 'true', EVENTS_POLL_MS: '20', WEBHOOK_SECRET: '' })
    const admin = { authorization: `Bearer ${await token('root', ['admin'])}`, 'content-type': 'application/json' }

    const first = await startInstance('first start', env, START)
    let sub: { id: number, secret: string }
    try {
      const body = JSON.stringify({ url: `${rx.base}/ok`, events: ['*'] })
      const res = await fetch(`${first.base}/webhooks`, { method: 'POST', headers: admin, body })
      assert.equal(res.status, 201, await res.clone().text())
      sub = await res.json() as { id: number, secret: string }
      assert.match(sub.secret, /^whsec_/)
      assert.ok(fs.existsSync(path.join(dir, 'blog.db')) && fs.existsSync(path.join(dir, 'webhook-sealing.key')))
    } finally {
      assert.equal(await stop(first), 0, first.output.join(''))
    }

    const second = await startInstance('second start', env, START)
    try {
      const res = await fetch(`${second.base}/webhooks/${sub.id}/ping`, { method: 'POST', headers: { authorization: admin.authorization } })
      assert.equal(res.status, 202, await res.clone().text())
      await until(() => rx.got.some(r => r.body.includes(`"webhook_id":${sub.id}`)), 'the ping after the restart', 20_000)
      const delivery = rx.got.find(r => r.body.includes(`"webhook_id":${sub.id}`))!
      const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map(h => [h, String(delivery.headers[h])]))
      assert.equal((new Webhook(sub.secret).verify(delivery.body, headers) as { type: string }).type, 'ping')
    } finally {
      assert.equal(await stop(second), 0, second.output.join(''))
    }
  })
})
