import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { ConfigError } from '../../src/config.ts'
import { catalogueOf, loadConfig } from '../../src/context.ts'
import { FACILITIES, RESOURCES } from '../../src/registry.ts'
import { remindersFacility } from '../fixtures/reminders/index.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../helper.ts'
import { receiver } from '../support/receiver.ts'
import { until } from '../support/poll.ts'
import { before } from '../support/hooks.ts'

// The one line a new facility adds to src/registry.ts, here beside the registry's own.
const facilities = [...FACILITIES, remindersFacility]
const ENV = {
  WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
  WEBHOOK_ALLOW_LOOPBACK: '1',
  EVENTS_POLL_MS: '20',
  REMINDERS_LEASE_MS: '5000',
}

for (const kind of await storeKinds()) {
  describe(`a new facility is its folder plus one registry line (test/fixtures/reminders) [${kind}]`, () => {
    let t: TestApp
    let rx: Awaited<ReturnType<typeof receiver>>
    before(async () => {
      t = await buildTestApp(kind, ENV, { facilities })
      rx = await receiver()
    })
    after(async () => {
      await rx.close()
    })

    it('reads its setting with the core\'s, and refuses a bad value naming it', () => {
      assert.equal(t.config.reminders?.leaseMs, 5000)
      assert.equal(loadConfig({}, [...facilities, ...RESOURCES]).reminders?.leaseMs, 30_000)
      assert.throws(() => loadConfig({ REMINDERS_LEASE_MS: '10' }, [...facilities, ...RESOURCES]), (err: unknown) => err instanceof ConfigError && err.message.includes('REMINDERS_LEASE_MS'))
      assert.equal(loadConfig({}).reminders, undefined, 'only where it is registered')
    })

    it('claims a due reminder under a lease: none again while it holds, another once it ran out', async () => {
      // An hour ahead of the clock: the facility's own job, which runs at start on the real clock,
      // must not claim the reminder before the test does.
      const now = new Date(Date.now() + 3_600_000)
      const id = await t.store.transaction(async uow => await uow.reminders.add('lease me', new Date(now.getTime() - 1000)))
      const first = await t.store.transaction(async uow => await uow.reminders.claim(now, 5000))
      assert.equal(first?.id, id)
      assert.equal(await t.store.transaction(async uow => await uow.reminders.claim(new Date(now.getTime() + 4999), 5000)), null)
      const second = await t.store.transaction(async uow => await uow.reminders.claim(new Date(now.getTime() + 5001), 5000))
      assert.equal(second?.id, id)
      assert.equal(await t.store.transaction(async uow => await uow.reminders.sent(first!, now)), false, 'the first lease was lost')
      assert.equal(await t.store.transaction(async uow => await uow.reminders.sent(second!, now)), true)
      assert.deepEqual(await t.store.reminders.find(id), { sent: true })
    })

    it('offers its event type to subscriptions, and its job raises it: a webhook delivers it', async () => {
      const admin = await t.auth('root', ['admin'])
      const unknown = await t.request({ method: 'POST', url: '/webhooks', headers: admin, payload: { url: `${rx.base}/nope`, events: ['reminder.unknown'] } })
      assert.equal(unknown.statusCode, 422)
      const sub = await t.request({ method: 'POST', url: '/webhooks', headers: admin, payload: { url: `${rx.base}/reminders`, events: ['reminder.sent'] } })
      assert.equal(sub.statusCode, 201, sub.body)
      const id = await t.store.transaction(async uow => await uow.reminders.add('water the plants', new Date()))
      t.context.jobs.wake('reminders')
      await until(() => rx.got.some(r => r.path === '/reminders'), 'the reminder.sent delivery')
      const event = JSON.parse(rx.got.find(r => r.path === '/reminders')!.body)
      assert.equal(event.type, 'reminder.sent')
      assert.deepEqual(event.data, { id, text: 'water the plants' })
      assert.deepEqual(await t.store.reminders.find(id), { sent: true })
    })

    it('adds its problem code to the catalogue: the OpenAPI document and the problem\'s page, in every language', async () => {
      const doc = json(await t.request({ method: 'GET', url: '/openapi.json' }))
      assert.ok(doc.components.schemas.Problem.properties.code.anyOf.some((c: { enum?: string[] }) => c.enum?.includes('REMINDER_LOST')))
      const page = await t.request({ method: 'GET', url: '/problems/reminder-lost' })
      assert.equal(page.statusCode, 200)
      assert.match(page.body, /HTTP status <strong>409<\/strong>, code <code>REMINDER_LOST<\/code>/)
      const catalogue = catalogueOf([...facilities, ...RESOURCES])
      assert.equal(catalogue.problems.REMINDER_LOST.status, 409)
      for (const lang of ['de', 'fr', 'es'] as const) assert.notEqual(catalogue.translations[lang].REMINDER_LOST.title, 'Reminder lost', lang)
      assert.equal('REMINDER_LOST' in catalogueOf().problems, false, 'only where it is registered')
    })
  })
}
