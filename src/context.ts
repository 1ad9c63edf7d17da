import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { Registry } from 'prom-client'
import { buildCatalogue, type Catalogue } from './catalogue.ts'
import { type Clock, systemClock } from './clock.ts'
import { type Config, type Env, readConfig } from './config.ts'
import { Authenticator } from './http/auth.ts'
import { InFlight } from './http/deadlines.ts'
import { CursorCodec } from './http/paging.ts'
import type { OutboxContext, Part, Resource, Services } from './http/resources.ts'
import { API_VERSIONS } from './http/versioning.ts'
import { JobRunner, type WebhookOutbox } from './jobs/job.ts'
import { Lifecycle } from './jobs/lifecycle.ts'
import { FACILITIES, PARTS, RESOURCES } from './registry.ts'
import type { StoreModule } from './store/module.ts'
import { openStore as openStoreWith } from './store/open-store.ts'
import type { Store } from './store/store.ts'

/** The outbox's poll when no resource sets one. */
const DEFAULT_OUTBOX_POLL_MS = 500

/**
 * Everything the service is built from, made in one place from the settings (in the manner of
 * atproto's AppContext.fromConfig): the resources, the store with their tables, the logger, the
 * credential checker, the cursor codec, the metrics registry, the catalogue, the background work
 * and the webhook outbox. `buildApp(context)` only registers it; nothing reaches a service through
 * a Fastify decoration.
 */
export interface AppContext {
  readonly config: Config
  /** The registry's resources, or a test's (a fixture resource beside them). */
  readonly resources: readonly Resource[]
  /** Every part, the facilities then the resources: what the catalogue, settings and store are made of. */
  readonly parts: readonly Part[]
  /** Every event type the parts raise, in their order. */
  readonly eventTypes: readonly string[]
  /** Open and migrated. */
  readonly store: Store
  readonly authenticator: Authenticator
  readonly cursors: CursorCodec
  /** The app's Prometheus registry: requests, and the counters of background work. */
  readonly metrics: Registry
  /** Problem codes, field codes and messages: the core's and the resources'. */
  readonly catalogue: Catalogue
  /** The service's logger (the app's requests log through a child of it). */
  readonly log: FastifyBaseLogger
  /** This instance's background work: the resources' jobs and the outbox, run unless BACKGROUND_WORK is off. */
  readonly jobs: JobRunner
  /** The webhook outbox's sender, shared by every resource that queues webhooks. */
  readonly webhooks: WebhookOutbox
  /** The requests in flight, which a shutdown that ran out of grace answers 503 (src/server.ts). */
  readonly inFlight: InFlight
  /** What the resources' `services` made, by name. */
  readonly services: Services
  /** What those services do when the app is ready, closing and closed. */
  readonly lifecycle: Lifecycle
  /** What every rule that decides by time reads the time from (src/clock.ts). */
  readonly clock: Clock
}

/**
 * Every setting from the environment: the core's and each part's section (the registry's parts
 * unless given), checked; throws ConfigError naming the first bad one.
 *
 * @example
 * const config = loadConfig({ PORT: '8080', DATABASE_URL: 'postgres://localhost/blog' })
 */
export function loadConfig (env: Env = process.env, parts: readonly Part[] = PARTS): Config {
  return readConfig(env, parts.flatMap(r => r.settings ?? []), API_VERSIONS)
}

/** What a test (or a tool) may supply instead of what the settings make. */
export interface ContextOverrides {
  readonly resources?: readonly Resource[]
  /** The facilities instead of the registry's (a fixture facility beside them). */
  readonly facilities?: readonly Part[]
  /** An open, migrated store (made with the resources' modules). */
  readonly store?: Store
  /** Pino options (a stream, a level) instead of the settings' level; false: no logging at all. */
  readonly logger?: false | pino.LoggerOptions & { stream?: pino.DestinationStream }
  /** The clock time-based rules read (a test's, which it advances) instead of the system's. */
  readonly clock?: Clock
}

/** The store modules of `parts`, which the store is opened with. */
export function storeModules (parts: readonly Part[]): StoreModule[] {
  return parts.flatMap(r => r.store ?? [])
}

/** The registry's store modules. */
export const STORE_MODULES: readonly StoreModule[] = storeModules(PARTS)

/**
 * Opens the store DATABASE_URL names with the tables and repositories of every part (the
 * registry's unless given).
 */
export async function openStore (config: Parameters<typeof openStoreWith>[0], parts: readonly Part[] = PARTS): Promise<Store> {
  return await openStoreWith(config, storeModules(parts))
}

/**
 * Builds the context: opens the store (migrating it when MIGRATE_ON_START is set) unless one is
 * given. On failure, a store it opened is closed again.
 */
export async function createContext (config: Config, overrides: ContextOverrides = {}): Promise<AppContext> {
  const resources = overrides.resources ?? RESOURCES
  const parts = [...overrides.facilities ?? FACILITIES, ...resources]
  const store = overrides.store ?? await openStore(config, parts)
  try {
    if (overrides.store === undefined && config.migrateOnStart) await store.migrate()
    const log = loggerOf(config, overrides.logger)
    const clock = overrides.clock ?? systemClock
    const metrics = new Registry()
    const jobs = new JobRunner(log, config.backgroundWork)
    const webhooks = outboxOf(parts, { config, store, metrics, log: log.child({ component: 'webhooks' }), pollMs: outboxPollMs(config, parts), clock })
    jobs.run(webhooks)
    const lifecycle = new Lifecycle()
    const made: Partial<Services> = {}
    for (const part of parts) {
      Object.assign(made, await part.services?.({ config, store, log, metrics, background: jobs, webhooks, lifecycle, clock }))
    }
    const services = Object.freeze(made) as Services
    for (const part of parts) {
      for (const job of part.jobs?.({ config, store, log, metrics, jobs, webhooks, resources, services, clock }) ?? []) jobs.add(job)
    }
    return Object.freeze({
      config,
      resources,
      parts,
      eventTypes: parts.flatMap(p => p.eventTypes ?? []),
      store,
      authenticator: new Authenticator(config.auth, store.apiKeys, clock),
      cursors: new CursorCodec(await store.serverSecret()),
      metrics,
      catalogue: catalogueOf(parts),
      log,
      jobs,
      webhooks,
      inFlight: new InFlight(),
      services,
      lifecycle,
      clock,
    })
  } catch (err) {
    if (overrides.store === undefined) await store.close().catch(() => {})
    throw err
  }
}

const REDACT = { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[redacted]' }

/** The service's logger: the settings' level, credentials redacted; or what a test asks for. */
function loggerOf (config: Config, override: ContextOverrides['logger']): FastifyBaseLogger {
  if (override === false) return pino({ level: 'silent' })
  const { stream, ...options } = override ?? {}
  const opts = { level: config.logLevel, redact: REDACT, ...options }
  return stream === undefined ? pino(opts) : pino(opts, stream)
}

/** The outbox's sender the parts bring (one at most), or one that sends nothing when none does. */
function outboxOf (parts: readonly Part[], ctx: OutboxContext): WebhookOutbox {
  const makers = parts.flatMap(p => p.outbox === undefined ? [] : [p])
  if (makers.length > 1) throw new Error(`two parts bring the webhook outbox: ${makers.map(p => p.name).join(', ')}`)
  return makers[0]?.outbox?.(ctx) ?? { start: () => {}, stop: async () => {}, wake: () => {} }
}

/** How often the webhook outbox looks for due deliveries: the shortest any resource asks for. */
function outboxPollMs (config: Config, parts: readonly Part[]): number {
  const asked = parts.flatMap(r => r.outboxPollMs?.(config) ?? [])
  return asked.length === 0 ? DEFAULT_OUTBOX_POLL_MS : Math.min(...asked)
}

/** The catalogue of the core and `parts` (the registry's unless given), in their order. */
export function catalogueOf (parts: readonly Part[] = PARTS): Catalogue {
  return buildCatalogue(parts)
}

/** The scopes a credential can carry: each resource's, and `admin`, which alone permits everything. */
export function knownScopes (parts: readonly Part[] = PARTS): string[] {
  return [...parts.flatMap(r => r.scopes ?? []), 'admin']
}
