import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { Webhook } from 'standardwebhooks'
import { buildApp } from '../../../src/app.ts'
import { ConfigError } from '../../../src/config.ts'
import { createContext } from '../../../src/context.ts'
import { generateApiKey } from '../../../src/http/pipeline/auth.ts'
import { SEALING_KEY_FILE } from '../../../src/facilities/events/secrets.ts'
import { freshDatabase, json, postgresAvailable, testConfig } from '../../helper.ts'
import { validateResponse } from '../../openapi-validator.ts'
import { type Received, receiver } from '../../support/receiver.ts'
import { until } from '../../support/poll.ts'

const ENV = { WEBHOOK_ALLOW_LOOPBACK: '1', EVENTS_POLL_MS: '20', WEBHOOK_RETRY_BASE_MS: '10', LOG_LEVEL: 'info' }
const SUBSCRIPTION = { url: 'http://127.0.0.1:9/x', events: ['*'] }
const OPERATOR_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`

interface Instance {
  request (opts: InjectOptions): Promise<LightMyRequestResponse>
  /** An admin's Authorization header. */
  admin: { authorization: string }
  /** Every line the instance logged. */
  log: string[]
  close (): Promise<void>
}

/** The service as `blog serve` builds it (its context, then its app) on a database and a data folder. */
async function start (db: { url: string, dataDir: string }, env: Record<string, string> = {}): Promise<Instance> {
  const log: string[] = []
  const context = await createContext(testConfig(db.url, db.dataDir, { ...ENV, ...env }), {
    logger: { level: 'info', stream: { write: (line: string) => { log.push(line) } } },
  })
  let app: FastifyInstance
  try {
    app = await buildApp(context)
    await app.ready()
  } catch (err) {
    await context.store.close()
    throw err
  }
  const key = generateApiKey()
  await context.store.apiKeys.create({ id: key.id, name: `admin-${key.id}`, scopes: ['admin'], hash: key.hash }, new Date())
  return {
    async request (opts) {
      const res = await app.inject(opts)
      validateResponse(app, opts, res)
      return res
    },
    admin: { authorization: `Bearer ${key.token}` },
    log,
    async close () {
      await app.close()
      await context.store.close()
    },
  }
}

function signedWith (r: Received, secret: string): boolean {
  const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map(h => [h, String(r.headers[h])]))
  try {
    new Webhook(secret).verify(r.body, headers)
    return true
  } catch {
    return false
  }
}

describe('the key that seals webhook secrets, made by the service [sqlite]', () => {
  let rx: Awaited<ReturnType<typeof receiver>>
  before(async () => { rx = await receiver() })
  after(async () => { await rx.close() })

  const subscribe = async (i: Instance) =>
    await i.request({ method: 'POST', url: '/webhooks', headers: i.admin, payload: { url: `${rx.base}/ok`, events: ['*'] } })
  /** Pings subscription `id` on `i` and waits for the delivery; whether it carried `secret`'s signature. */
  const pinged = async (i: Instance, id: number, secret: string): Promise<boolean> => {
    const from = rx.got.length
    const res = await i.request({ method: 'POST', url: `/webhooks/${id}/ping`, headers: i.admin })
    assert.equal(res.statusCode, 202, res.body)
    const mine = () => rx.got.slice(from).filter(r => r.body.includes(`"webhook_id":${id}`))
    await until(() => mine().length > 0, `the ping of subscription ${id}`, 20_000)
    return signedWith(mine()[0]!, secret)
  }

  it('on a fresh data folder, makes the key at start (mode 0600), and POST /webhooks answers 201 with a secret; ' +
    'after a restart its deliveries are still signed with it', async () => {
    const db = await freshDatabase('sqlite')
    const folder = { url: '', dataDir: db.dataDir }
    const file = path.join(db.dataDir, SEALING_KEY_FILE)
    try {
      // DATABASE_URL unset: the embedded default, SQLite under DATA_DIR.
      const first = await start(folder, { DATABASE_URL: '' })
      let sub: { id: number, secret: string }
      let key: string
      try {
        assert.ok(fs.existsSync(path.join(db.dataDir, 'blog.db')), 'the embedded default database')
        assert.ok(fs.existsSync(file), 'made at start, before any request')
        assert.equal(fs.statSync(file).mode & 0o777, 0o600)
        key = fs.readFileSync(file, 'utf8').trim()
        assert.match(key, /^whsec_[A-Za-z0-9+/]{43}=$/)
        const res = await subscribe(first)
        assert.equal(res.statusCode, 201, res.body)
        sub = json(res)
        assert.match(sub.secret, /^whsec_/)
        assert.ok(await pinged(first, sub.id, sub.secret))
        assert.equal(first.log.filter(l => l.includes('made the key that seals')).length, 1, 'said once')
        assert.ok(first.log.every(l => !l.includes(key) && !l.includes(key.slice('whsec_'.length))), 'the key is never logged')
        assert.ok(first.log.every(l => !l.includes(sub.secret)), 'nor the subscription\'s secret')
      } finally {
        await first.close()
      }

      const second = await start(folder, { DATABASE_URL: '' })
      try {
        assert.equal(fs.readFileSync(file, 'utf8').trim(), key, 'the same key, read again')
        assert.ok(second.log.every(l => !l.includes('made the key')), 'nothing was made this time')
        assert.ok(await pinged(second, sub.id, sub.secret), 'signed with the secret given before the restart')
      } finally {
        await second.close()
      }
    } finally {
      await db.drop()
    }
  })

  it('lets an operator-set WEBHOOK_SECRET win, still opening what the made key sealed', async () => {
    const db = await freshDatabase('sqlite')
    const file = path.join(db.dataDir, SEALING_KEY_FILE)
    try {
      const made = await start(db)
      const before = json(await subscribe(made))
      await made.close()

      const operated = await start(db, { WEBHOOK_SECRET: OPERATOR_SECRET })
      let after: { id: number, secret: string }
      try {
        assert.ok(await pinged(operated, before.id, before.secret), 'a subscription sealed under the made key still signs')
        after = json(await subscribe(operated))
        assert.ok(await pinged(operated, after.id, after.secret))
      } finally {
        await operated.close()
      }

      // Without the made key, what was sealed after WEBHOOK_SECRET was set still opens: it was sealed under it.
      fs.rmSync(file)
      const alone = await start(db, { WEBHOOK_SECRET: OPERATOR_SECRET })
      try {
        assert.ok(await pinged(alone, after.id, after.secret))
        assert.ok(!fs.existsSync(file), 'no key is made when WEBHOOK_SECRET is set')
      } finally {
        await alone.close()
      }
    } finally {
      await db.drop()
    }
  })

  it('refuses to start, naming the file, when the key file holds no key', async () => {
    const db = await freshDatabase('sqlite')
    try {
      fs.writeFileSync(path.join(db.dataDir, SEALING_KEY_FILE), 'not a key\n', { mode: 0o600 })
      await assert.rejects(start(db), (err: unknown) =>
        err instanceof ConfigError && err.setting === 'DATA_DIR' && err.message.includes(SEALING_KEY_FILE))
    } finally {
      await db.drop()
    }
  })
})

describe('the key that seals webhook secrets, on PostgreSQL without WEBHOOK_SECRET', async () => {
  const skip = !await postgresAvailable()

  const title = 'answers POST /webhooks and rotate-secret with 409 WEBHOOK_SECRET_NOT_SET, says so once at start, and makes no key'
  it(title, { skip }, async () => {
    const db = await freshDatabase('postgres')
    try {
      // A subscription made while the setting was there, to rotate once it is gone.
      const set = await start(db, { WEBHOOK_SECRET: OPERATOR_SECRET })
      const sub = json(await set.request({ method: 'POST', url: '/webhooks', headers: set.admin, payload: SUBSCRIPTION }))
      assert.ok(set.log.every(l => !l.includes('WEBHOOK_SECRET is not set')))
      await set.close()

      const unset = await start(db)
      try {
        assert.equal(unset.log.filter(l => l.includes('WEBHOOK_SECRET is not set')).length, 1, 'the start-up log says so once')
        const requests = [
          { method: 'POST', url: '/webhooks', headers: unset.admin, payload: SUBSCRIPTION },
          { method: 'POST', url: `/webhooks/${sub.id}/rotate-secret`, headers: unset.admin },
        ] as const
        for (const req of requests) {
          const res = await unset.request(req)
          assert.equal(res.statusCode, 409, `${req.url}: ${res.body}`)
          const problem = json(res)
          assert.equal(problem.code, 'WEBHOOK_SECRET_NOT_SET')
          assert.equal(problem.type, '/problems/webhook-secret-not-set')
          assert.match(problem.detail, /WEBHOOK_SECRET/)
          assert.equal(problem.errors, undefined, 'a problem of its own, not a field error')
        }
        const german = await unset.request({ ...requests[0], headers: { ...unset.admin, 'accept-language': 'de' } })
        assert.equal(json(german).title, 'WEBHOOK_SECRET nicht gesetzt')
        assert.equal(unset.log.filter(l => l.includes('WEBHOOK_SECRET is not set')).length, 1, 'and not again per request')
        assert.ok(!fs.existsSync(path.join(db.dataDir, SEALING_KEY_FILE)), 'instances would each make their own: none is made')
      } finally {
        await unset.close()
      }
    } finally {
      await db.drop()
    }
  })
})
