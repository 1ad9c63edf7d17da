import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { Gauge, Registry } from 'prom-client'
import { buildCatalogue, type Catalogue } from './catalogue.ts'
import { type Clock, systemClock } from './clock.ts'
import { type Config, type Env, readConfig } from './config.ts'
import { Authenticator, type PeopleCredentials } from './http/pipeline/auth.ts'
import { InFlight } from './http/pipeline/deadlines.ts'
import { idempotencyJobs } from './http/pipeline/idempotency.ts'
import { PublicCache } from './http/protocol/public-cache.ts'
import { Representations } from './http/toolkit/conditional.ts'
import { CursorCodec } from './http/toolkit/paging.ts'
import { type Facility, type Part, type PartContext, type Resource, schemasOf, type Services } from './http/contract/resources.ts'
import { API_VERSIONS } from './http/protocol/versioning.ts'
import { JobRunner } from './jobs/job.ts'
import { Lifecycle } from './jobs/lifecycle.ts'
import { FACILITIES, PARTS, RESOURCES } from './registry.ts'
import type { StoreModule } from './store/module.ts'
import { openStore as openStoreWith } from './store/open-store.ts'
import type { Store } from './store/store.ts'

/**
 * Everything the service is built from, made in one place from the settings (in the manner of
 * atproto's AppContext.fromConfig): the resources, the store with their tables, the logger, the
 * credential checker, the cursor codec, the metrics registry, the catalogue, the parts' services
 * and their jobs. `buildApp(context)` only registers it; nothing reaches a service through a
 * Fastify decoration. Its `PartContext` is what every part's services, jobs and routes get.
 */
export interface AppContext extends PartContext {
  /** Every resource served: the registry's (or a test's), then those the facilities carry. */
  readonly resources: readonly Resource[]
  /** Every part: the facilities, the resources, then the resources the facilities carry (what the catalogue, settings and store are made of). */
  readonly parts: readonly Part[]
  /** Open and migrated. */
  readonly store: Store
  readonly authenticator: Authenticator
  /** Problem codes, field codes and messages: the core's and the parts'. */
  readonly catalogue: Catalogue
  /** This instance's jobs, every part's: those the deployment shares run unless BACKGROUND_WORK is off. */
  readonly jobs: JobRunner
  /** The digests of every resource's representations, which go into its ETags. */
  readonly representations: Representations
  /** The requests in flight, which a shutdown that ran out of grace answers 503 (src/server.ts). */
  readonly inFlight: InFlight
  /** Anonymous public answers kept by this instance; null when PUBLIC_CACHE_BYTES is 0. */
  readonly publicCache: PublicCache | null
}

/**
 * Every setting from the environment: the core's and each part's section (the registry's parts
 * unless given), checked; throws ConfigError naming the first bad one.
 *
 * @example
 * const config = loadConfig({ PORT: '8080', DATABASE_URL: 'postgres://localhost/blog' })
 */
export function loadConfig (env: Env = process.env, parts: readonly Part[] = PARTS): Config {
  return readConfig(env, withFacilityRoutes(parts).flatMap(r => r.settings ?? []), API_VERSIONS)
}

/** What a test (or a tool) may supply instead of what the settings make. */
export interface ContextOverrides {
  readonly resources?: readonly Resource[]
  /** The facilities instead of the registry's (a fixture facility beside them). */
  readonly facilities?: readonly Facility[]
  /** An open, migrated store (made with the resources' modules). */
  readonly store?: Store
  /** Pino options (a stream, a level) instead of the settings' level; false: no logging at all. */
  readonly logger?: false | pino.LoggerOptions & { stream?: pino.DestinationStream }
  /** The clock time-based rules read (a test's, which it advances) instead of the system's. */
  readonly clock?: Clock
}

/**
 * `parts` and then the resources its facilities carry (once, whether `parts` lists them or not):
 * what the settings, store, catalogue and scopes are made of. A facility's routes come after the
 * registry's resources, which the API's description and index lead with.
 */
export function withFacilityRoutes (parts: readonly (Part | Facility)[]): Part[] {
  return [...new Set([...parts, ...parts.flatMap(p => 'resources' in p ? p.resources ?? [] : [])])]
}

/** The store modules of `parts`, which the store is opened with. */
export function storeModules (parts: readonly Part[]): StoreModule[] {
  return withFacilityRoutes(parts).flatMap(r => r.store ?? [])
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
  const facilities = overrides.facilities ?? FACILITIES
  const resources = [...overrides.resources ?? RESOURCES, ...facilities.flatMap(f => f.resources ?? [])]
  const parts = withFacilityRoutes([...facilities, ...overrides.resources ?? RESOURCES])
  const store = overrides.store ?? await openStore(config, parts)
  try {
    if (overrides.store === undefined && config.migrateOnStart) await store.migrate()
    const log = loggerOf(config, overrides.logger)
    const clock = overrides.clock ?? systemClock
    const jobs = new JobRunner(log, config.backgroundWork, clock)
    const made: Partial<Services> = {}
    const ctx: PartContext = {
      config,
      store,
      clock,
      log,
      metrics: new Registry(),
      cursors: new CursorCodec(await store.serverSecret()),
      jobs,
      lifecycle: new Lifecycle(),
      resources,
      eventTypes: parts.flatMap(p => p.eventTypes ?? []),
      services: made as Services,
    }
    for (const part of parts) Object.assign(made, await part.services?.(ctx))
    Object.freeze(made)
    for (const job of idempotencyJobs(store, config, clock)) jobs.add(job)
    for (const part of parts) for (const job of part.jobs?.(ctx) ?? []) jobs.add(job)
    const catalogue = catalogueOf(parts)
    const publicCache = await publicCacheOf(ctx)
    return Object.freeze({
      ...ctx,
      parts,
      authenticator: new Authenticator(config.auth, store.apiKeys, clock, peopleOf(made)),
      catalogue,
      representations: new Representations(resources.map(r => [r.name, schemasOf(r, ctx.eventTypes)] as const)),
      jobs,
      inFlight: new InFlight(config.requestTimeoutMs, catalogue),
      publicCache,
    })
  } catch (err) {
    if (overrides.store === undefined) await store.close().catch(() => {})
    throw err
  }
}

/**
 * The public answers cache (the API's anonymous reads and the site's pages), emptied by every
 * change that records an event: this instance's when its unit of work ends (before the write is
 * answered), any instance's when the event log's reader reads it (within EVENTS_POLL_MS). It
 * answers only while that reader has read within the last second; with no reader of the log (no
 * events facility) there is no cache.
 */
async function publicCacheOf ({ config, store, services, lifecycle, metrics }: PartContext): Promise<PublicCache | null> {
  const hub = (services as Partial<Services>).eventStreams
  if (config.publicCache.bytes === 0 || hub === undefined) return null
  const cache = new PublicCache(config.publicCache.bytes, config.publicCache.entries, () => hub.lastRead)
  // eslint-disable-next-line no-new -- registered with the app's registry, read at each scrape
  new Gauge({ name: 'public_cache_bytes', help: 'Bytes the public answers cache holds (bodies, headers and keys, the API\'s answers and the site\'s pages)', registers: [metrics], collect () { this.set(cache.bytes) } })
  // eslint-disable-next-line no-new -- as above
  new Gauge({ name: 'public_cache_entries', help: 'Answers and pages the public answers cache holds', registers: [metrics], collect () { this.set(cache.count) } })
  const stopLocal = store.afterEvents(() => { cache.clear() })
  // Events for one webhook alone (a test delivery) change nothing a reader sees.
  const stopRemote = await hub.listen(events => { if (events.some(e => e.webhookId === null)) cache.clear() })
  lifecycle.onClosed(async () => {
    stopLocal()
    stopRemote()
  })
  return cache
}

/** People's credentials, when the identity facility is among the parts. */
function peopleOf (services: Partial<Services>): PeopleCredentials | null {
  const identity = services.identity
  if (identity === undefined) return null
  return { authenticate: async t => await identity.authenticate(t), keyPrincipal: async (id, scopes) => await identity.keyPrincipal(id, scopes) }
}

const REDACT = { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[redacted]' }

/** The service's logger: the settings' level, credentials redacted; or what a test asks for. */
function loggerOf (config: Config, override: ContextOverrides['logger']): FastifyBaseLogger {
  if (override === false) return pino({ level: 'silent' })
  const { stream, ...options } = override ?? {}
  const opts = { level: config.logLevel, redact: REDACT, ...options }
  return stream === undefined ? pino(opts) : pino(opts, stream)
}

/** The catalogue of the core and `parts` (the registry's unless given), in their order. */
export function catalogueOf (parts: readonly Part[] = PARTS): Catalogue {
  return buildCatalogue(withFacilityRoutes(parts))
}

/** The scopes a credential can carry: each resource's, and `admin`, which alone permits everything. */
export function knownScopes (parts: readonly Part[] = PARTS): string[] {
  return [...withFacilityRoutes(parts).flatMap(r => r.scopes ?? []), 'admin']
}
