import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadConfig, openStore } from '../../src/context.ts'
import { freshDatabase, storeKinds } from '../helper.ts'
import { processEnv, startInstance, token } from '../process-helper.ts'
import { recordResult } from '../reliability-record.ts'
import { receiver } from '../support/receiver.ts'
import { until } from '../support/poll.ts'

/**
 * At least once across crashes: writers raise events while two subscriptions are
 * served, and the instance is killed (SIGKILL) at a random moment, so some kills land in a fan-out
 * unit or with deliveries in flight. After the last round a fresh instance finishes the work; then
 * every event of a committed change has reached every matching subscription at least once, and
 * nothing was delivered that the log does not hold (a change that rolled back raised nothing).
 */
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 1)
const WORKERS = 6
const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`

async function kill (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

async function writer (origin: string, authorization: string, stop: AbortSignal): Promise<void> {
  for (let i = 0; !stop.aborted; i++) {
    try {
      const res = await fetch(`${origin}/orders`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ customer_email: 'c@example.com', items: [{ sku: `s${i}`, quantity: 1 }] }) })
      const body = await res.json() as { id?: number }
      if (res.status === 201 && i % 2 === 1) await (await fetch(`${origin}/orders/${body.id}/cancel`, { method: 'POST', headers: { authorization } })).arrayBuffer()
    } catch {
      return
    }
  }
}

for (const kind of await storeKinds()) {
  describe(`crash: SIGKILL during fan-out and delivery [${kind}]`, () => {
    let drop: (() => Promise<void>) | undefined
    const rx = receiver()
    after(async () => {
      await drop?.()
      await (await rx).close()
    })

    it(`delivers every committed event to every matching subscription at least once over ${ROUNDS} kill points`, { timeout: 300_000 }, async () => {
      const r = await rx
      const db = await freshDatabase(kind)
      drop = db.drop
      const env = processEnv(db, { RATE_LIMIT_MAX: '0', WEBHOOK_SECRET: SECRET, WEBHOOK_ALLOW_LOOPBACK: '1', EVENTS_POLL_MS: '20', EXPORT_POLL_MS: '20', WEBHOOK_RETRY_BASE_MS: '50' })
      const writerAuth = `Bearer ${await token('writer', ['orders:write'])}`
      const adminAuth = `Bearer ${await token('root', ['admin'])}`
      for (let round = 0; round < ROUNDS; round++) {
        const { child, base } = await startInstance(`events crash ${round}`, env)
        try {
          if (round === 0) {
            for (const [path, events] of [['/ok?all', ['*']], ['/ok?created', ['order.created']]] as const) {
              const res = await fetch(`${base}/webhooks`, { method: 'POST', headers: { authorization: adminAuth, 'content-type': 'application/json' }, body: JSON.stringify({ url: `${r.base}${path}`, events }) })
              assert.equal(res.status, 201, await res.text())
            }
          }
          const stop = new AbortController()
          const workers = Array.from({ length: WORKERS }, async () => { await writer(base, writerAuth, stop.signal) })
          const seen = r.got.length
          await until(() => r.got.length > seen, 'the burst\'s first delivery', 20_000)
          // Real time on purpose: the kill lands at a random point of the child's burst.
          await sleep(Math.random() * 400)
          await kill(child)
          stop.abort()
          await Promise.all(workers)
        } finally {
          await kill(child)
        }
      }
      // A last instance finishes what the killed ones left: the fan-out and every pending delivery.
      const last = await startInstance('events crash: recovery', env)
      const store = await openStore(loadConfig(env))
      try {
        await until(async () => (await store.events.fanOutPosition()) === (await store.events.lastId()) && (await store.webhooks.backlog()).pending === 0, 'the fan-out and the deliveries to finish', 120_000)
        const events = (await store.events.list(0, 1_000_000)).filter(e => e.webhookId === null)
        assert.ok(events.length > 0)
        const all = new Map<string, Set<string>>([['all', new Set()], ['created', new Set()]])
        for (const x of r.got) all.get(x.url.split('?')[1] ?? '')?.add(String(x.headers['webhook-id']))
        const logged = new Set(events.map(e => String(e.id)))
        for (const e of events) {
          assert.ok(all.get('all')!.has(String(e.id)), `event ${e.id} (${e.type}) never reached the "*" subscription`)
          if (e.type === 'order.created') assert.ok(all.get('created')!.has(String(e.id)), `event ${e.id} never reached the order.created subscription`)
        }
        for (const [name, ids] of all) for (const id of ids) assert.ok(logged.has(id), `${name} got ${id}, which no committed change raised`)
        const orders = await store.transaction(async uow => await uow.orders.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 1_000_000 }, { subject: 'checker', scopes: new Set(['admin']), kind: 'jwt' }))
        const created = new Set(events.filter(e => e.type === 'order.created').map(e => (JSON.parse(e.data) as { id: number }).id))
        assert.deepEqual(new Set(orders.items.map(o => o.id)), created, 'each committed order raised its event, and no other order did')
        recordResult(`crash-events-${kind}`, {
          test: `SIGKILL during fan-out and delivery, restart [${kind}]`,
          injected: `SIGKILL at a random point while ${WORKERS} writers raise events and 2 subscriptions are served`,
          count: ROUNDS,
          result: `${events.length} events of committed changes, each delivered at least once to every matching subscription; ${r.got.length} deliveries received, none of an event the log does not hold`,
        })
      } finally {
        await store.close()
        await kill(last.child)
      }
    })
  })
}
