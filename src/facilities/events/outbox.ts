import { Counter, Gauge } from 'prom-client'
import type { PartContext } from '../../http/contract/resources.ts'
import { WebhookSender } from './webhook-sender.ts'

/**
 * The webhook outbox's sender, one job per instance, shared by every part that queues webhooks
 * (woken by WEBHOOK_DELIVERIES_JOB), with its metrics: attempts by outcome, and the backlog (pending deliveries, the oldest one's age)
 * read from the store when scraped, so every instance reports the deployment's queue.
 */
export function webhookSender ({ config, store, metrics, log, clock }: PartContext): WebhookSender {
  const attempts = new Counter({
    name: 'webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered (succeeded), retry (failed, tried again later), failed (given up); their sum is the attempts made',
    labelNames: ['outcome'],
    registers: [metrics],
  })
  let backlog: Promise<{ pending: number, oldestCreatedAt: string | null }> | null = null
  // Both gauges are read by one scrape: one query serves them.
  const readBacklog = async () => {
    backlog ??= store.webhooks.backlog().finally(() => { setImmediate(() => { backlog = null }) })
    return await backlog
  }
  metrics.registerMetric(new Gauge({
    name: 'webhook_deliveries_pending',
    help: 'Webhook deliveries waiting to be delivered (the queue depth)',
    registers: [],
    async collect () { this.set((await readBacklog()).pending) },
  }))
  metrics.registerMetric(new Gauge({
    name: 'webhook_oldest_pending_delivery_age_seconds',
    help: 'Age of the oldest webhook delivery still waiting (0 when none)',
    registers: [],
    async collect () {
      const oldest = (await readBacklog()).oldestCreatedAt
      this.set(oldest === null ? 0 : Math.max(0, (clock.now().getTime() - Date.parse(oldest)) / 1000))
    },
  }))
  return new WebhookSender({
    store,
    log: log.child({ component: 'webhooks' }),
    secret: config.eventLog.webhookSecret,
    allowLoopback: config.eventLog.webhookAllowLoopback,
    timeoutMs: config.eventLog.webhookTimeoutMs,
    maxAttempts: config.eventLog.webhookMaxAttempts,
    retryBaseMs: config.eventLog.webhookRetryBaseMs,
    // Deliveries are woken by the commits that queue them, and a retry by its own time: the poll
    // only finds what another instance's sender gave back.
    pollMs: config.eventLog.eventsPollMs,
    attempts,
    clock,
  })
}
