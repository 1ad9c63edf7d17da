import { ConfigError, type SettingsSection } from '../../config.ts'

/** The event log's and the webhook outbox's settings: `config.eventLog`. */
export interface EventLogSettings {
  readonly webhookSecret: string | null
  readonly webhookAllowLoopback: boolean
  /** A webhook attempt that has not been answered in this time counts as failed. */
  readonly webhookTimeoutMs: number
  /** Attempts per webhook before it is given up. */
  readonly webhookMaxAttempts: number
  /** First retry delay; each further one doubles, with full jitter. */
  readonly webhookRetryBaseMs: number
  /** Events are kept this many hours (EVENTS_RETENTION_H). */
  readonly eventsRetentionH: number
  /** How often the event stream and the fan-out to subscriptions look for new events (EVENTS_POLL_MS). */
  readonly eventsPollMs: number
}

// The registry always lists the facility, so the section is always there.
declare module '../../config.ts' { interface ResourceSettings { readonly eventLog: EventLogSettings } }

export const eventLogSettings: SettingsSection<'eventLog'> = {
  name: 'eventLog',
  read: env => {
    const webhookSecret = env.str('WEBHOOK_SECRET')
    if (webhookSecret !== null) {
      const m = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(webhookSecret)
      if (!m || Buffer.from(m[1]!, 'base64').length < 16) {
        throw new ConfigError('WEBHOOK_SECRET', 'must be whsec_ followed by at least 16 bytes in base64')
      }
    }
    return {
      webhookSecret,
      webhookAllowLoopback: env.bool('WEBHOOK_ALLOW_LOOPBACK', false),
      webhookTimeoutMs: env.int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
      webhookMaxAttempts: env.int('WEBHOOK_MAX_ATTEMPTS', 8, 1, 50),
      webhookRetryBaseMs: env.int('WEBHOOK_RETRY_BASE_MS', 2_000, 10, 3_600_000),
      eventsRetentionH: env.int('EVENTS_RETENTION_H', 72, 1, 24 * 365),
      eventsPollMs: env.int('EVENTS_POLL_MS', 500, 10, 2000),
    }
  },
  rows: [
    { name: 'WEBHOOK_SECRET', default: 'unset', description: '`whsec_<base64>` key (at least 16 bytes) that signs export webhooks (Standard Webhooks) and seals webhook subscriptions\' own secrets in the database. Unset: `POST /exports` with a `callback_url` is 422, since an unsigned webhook could be forged; on SQLite the service seals subscriptions\' secrets under a key it makes at first start in `DATA_DIR/webhook-sealing.key` (mode 0600), so webhooks work out of the box; on PostgreSQL, where every instance needs the same key, `POST /webhooks` answers 409 `WEBHOOK_SECRET_NOT_SET` (and the start-up log says so). Set, it always wins.' },
    { name: 'WEBHOOK_ALLOW_LOOPBACK', default: 'false', description: '`true` lets callback URLs resolve to loopback addresses (tests, local development). Private, link-local and reserved addresses stay refused (422), at creation and again at each delivery.' },
    { name: 'WEBHOOK_TIMEOUT_MS', default: '10000', description: 'A webhook attempt not answered in this time counts as failed and is retried.' },
    { name: 'WEBHOOK_MAX_ATTEMPTS', default: '8', description: 'Attempts per webhook (1–50) before it is given up (logged, counted in the metrics).' },
    { name: 'WEBHOOK_RETRY_BASE_MS', default: '2000', description: 'Wait before the first retry; each further one doubles (at most an hour), with full jitter.' },
    { name: 'EVENTS_RETENTION_H', default: '72', description: 'Events (and finished webhook deliveries) are kept this many hours (1–8760); a stream resuming before what was deleted begins with a `reset` event ([events.md](events.md)).' },
    { name: 'EVENTS_POLL_MS', default: '500', description: 'How often each instance reads new events for its open change streams and fans them out to webhook subscriptions (10–2000): the most a stream or a webhook lags behind a commit on another instance.' },
  ],
}
