import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError } from '../../../src/config.ts'
import { loadConfig } from '../../../src/context.ts'

const refuses = (env: Record<string, string>, name: string) => {
  assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && err.message.includes(name))
}

describe('the events facility\'s settings (config.eventLog)', () => {
  it('reads its defaults', () => {
    assert.deepEqual(loadConfig({}).eventLog, {
      webhookSecret: null,
      webhookAllowLoopback: false,
      webhookTimeoutMs: 10_000,
      webhookMaxAttempts: 8,
      webhookRetryBaseMs: 2_000,
      eventsRetentionH: 72,
      eventsPollMs: 500,
    })
  })

  it('takes a WEBHOOK_SECRET of whsec_ and 16 bytes, and refuses 15 bytes or another prefix at start', () => {
    const key = Buffer.alloc(16, 7).toString('base64')
    assert.equal(loadConfig({ WEBHOOK_SECRET: `whsec_${key}` }).eventLog.webhookSecret, `whsec_${key}`)
    refuses({ WEBHOOK_SECRET: `whsec_${Buffer.alloc(15, 7).toString('base64')}` }, 'WEBHOOK_SECRET')
    refuses({ WEBHOOK_SECRET: `wh_${key}` }, 'WEBHOOK_SECRET')
  })

  it('holds EVENTS_POLL_MS to 10–2000 and WEBHOOK_MAX_ATTEMPTS to 1–50', () => {
    assert.equal(loadConfig({ EVENTS_POLL_MS: '10' }).eventLog.eventsPollMs, 10)
    assert.equal(loadConfig({ EVENTS_POLL_MS: '2000' }).eventLog.eventsPollMs, 2000)
    refuses({ EVENTS_POLL_MS: '9' }, 'EVENTS_POLL_MS')
    refuses({ EVENTS_POLL_MS: '2001' }, 'EVENTS_POLL_MS')
    assert.equal(loadConfig({ WEBHOOK_MAX_ATTEMPTS: '50', WEBHOOK_ALLOW_LOOPBACK: 'true' }).eventLog.webhookMaxAttempts, 50)
    refuses({ WEBHOOK_MAX_ATTEMPTS: '0' }, 'WEBHOOK_MAX_ATTEMPTS')
    refuses({ WEBHOOK_MAX_ATTEMPTS: '51' }, 'WEBHOOK_MAX_ATTEMPTS')
  })
})
