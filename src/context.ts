import { Registry } from 'prom-client'
import { buildCatalogue, type Catalogue } from './catalogue.ts'
import { type Config, type Env, readConfig } from './config.ts'
import { Authenticator } from './http/auth.ts'
import { CursorCodec } from './http/paging.ts'
import type { Resource } from './http/resources.ts'
import { API_VERSIONS } from './http/versioning.ts'
import { RESOURCES } from './registry.ts'
import type { StoreModule } from './store/module.ts'
import { openStore as openStoreWith } from './store/open-store.ts'
import type { Store } from './store/store.ts'

/**
 * Everything the service is built from, made in one place from the settings (in the manner of
 * atproto's AppContext.fromConfig): the resources, the store with their tables, the credential
 * checker, the cursor codec, the metrics registry. `buildApp(context)` only registers it.
 */
export interface AppContext {
  readonly config: Config
  /** The registry's resources, or a test's (a fixture resource beside them). */
  readonly resources: readonly Resource[]
  /** Open and migrated. */
  readonly store: Store
  readonly authenticator: Authenticator
  readonly cursors: CursorCodec
  /** The app's Prometheus registry: requests, and the counters of background work. */
  readonly metrics: Registry
  /** Problem codes, field codes and messages: the core's and the resources'. */
  readonly catalogue: Catalogue
}

/**
 * Every setting from the environment: the core's and each resource's section (the registry's
 * resources unless given), checked; throws ConfigError naming the first bad one.
 *
 * @example
 * const config = loadConfig({ PORT: '8080', DATABASE_URL: 'postgres://localhost/blog' })
 */
export function loadConfig (env: Env = process.env, resources: readonly Resource[] = RESOURCES): Config {
  return readConfig(env, resources.flatMap(r => r.settings ?? []), API_VERSIONS)
}

/** What a test (or a tool) may supply instead of what the settings make. */
export interface ContextOverrides {
  readonly resources?: readonly Resource[]
  /** An open, migrated store (made with the resources' modules). */
  readonly store?: Store
}

/** The store modules of `resources`, which the store is opened with. */
export function storeModules (resources: readonly Resource[]): StoreModule[] {
  return resources.flatMap(r => r.store ?? [])
}

/** The registry's store modules. */
export const STORE_MODULES: readonly StoreModule[] = storeModules(RESOURCES)

/**
 * Opens the store DATABASE_URL names with the tables and repositories of every resource (the
 * registry's unless given).
 */
export async function openStore (config: Parameters<typeof openStoreWith>[0], resources: readonly Resource[] = RESOURCES): Promise<Store> {
  return await openStoreWith(config, storeModules(resources))
}

/**
 * Builds the context: opens the store (migrating it when MIGRATE_ON_START is set) unless one is
 * given. On failure, a store it opened is closed again.
 */
export async function createContext (config: Config, overrides: ContextOverrides = {}): Promise<AppContext> {
  const resources = overrides.resources ?? RESOURCES
  const store = overrides.store ?? await openStore(config, resources)
  try {
    if (overrides.store === undefined && config.migrateOnStart) await store.migrate()
    return Object.freeze({
      config,
      resources,
      store,
      authenticator: new Authenticator(config.auth, store.apiKeys),
      cursors: new CursorCodec(await store.serverSecret()),
      metrics: new Registry(),
      catalogue: catalogueOf(resources),
    })
  } catch (err) {
    if (overrides.store === undefined) await store.close().catch(() => {})
    throw err
  }
}

/** The catalogue of the core and `resources` (the registry's unless given), in their order. */
export function catalogueOf (resources: readonly Resource[] = RESOURCES): Catalogue {
  return buildCatalogue(resources)
}

/** The scopes a credential can carry: each resource's, and `admin`, which alone permits everything. */
export function knownScopes (resources: readonly Resource[] = RESOURCES): string[] {
  return [...resources.flatMap(r => r.scopes ?? []), 'admin']
}
