import { createPublicKey } from 'node:crypto'
import { isIP } from 'node:net'
import os from 'node:os'
import path from 'node:path'

/** A setting that cannot be used: start-up stops with one line naming it (exit code 2). */
export class ConfigError extends Error {
  readonly setting: string
  constructor (setting: string, reason: string) {
    super(`${setting}: ${reason}`)
    this.setting = setting
  }
}

export interface VersionDates {
  readonly deprecatedAt: Date | null
  readonly sunsetAt: Date | null
}

/**
 * The sections resources add to the settings, each under its name (`config.editorial`): a
 * resource declares its own with `declare module '…/config.ts' { interface ResourceSettings { … } }`
 * and reads it with a SettingsSection it lists on itself (src/http/contract/resources.ts).
 */
export interface ResourceSettings {}

/** Every setting: the core's, and the sections of the resources it was loaded with. */
export interface Config extends ResourceSettings {
  readonly port: number
  readonly host: string
  /** Where readers reach the service: the origin (and path prefix) of feed links, no trailing slash. */
  readonly publicBaseUrl: string
  /**
   * The reading site: its listener (SITE_PORT; null when 0, the site off) and the origin readers
   * reach it at (SITE_BASE_URL; default `http://HOST:SITE_PORT`; null when the site is off).
   */
  readonly site: { readonly port: number | null, readonly baseUrl: string | null, readonly themeDir: string | null }
  /** `sqlite:<file>` or `postgres://…` */
  readonly databaseUrl: string
  readonly storeKind: 'sqlite' | 'postgres'
  readonly dataDir: string
  readonly redisUrl: string | null
  /** Prefix of every Redis key the service writes, so deployments can share one Redis. */
  readonly redisKeyPrefix: string
  readonly logLevel: string
  readonly migrateOnStart: boolean
  readonly pgPoolMax: number
  /** Wait for a PostgreSQL connection (new, or from a full pool) at most this long. */
  readonly pgConnectTimeoutMs: number
  /** PostgreSQL cancels statements running longer (0: no limit). */
  readonly pgStatementTimeoutMs: number
  /** A wait for the store (a connection and its first statement together; each later statement) outlasts this at most. */
  readonly storeBudgetMs: number
  /** Consecutive store failures that open its circuit (503 at once until a probe succeeds); 0: never. */
  readonly storeCircuitFailures: number
  readonly auth: {
    readonly jwtSecret: string | null
    readonly jwtPublicKey: string | null
    readonly jwksUrl: string | null
    readonly issuer: string | null
    readonly audience: string | null
    readonly clockToleranceS: number
    /** Least time between two fetches of the JWKS caused by an unknown `kid` (rotation pick-up). */
    readonly jwksCooldownS: number
  }
  readonly rateLimit: { readonly max: number, readonly windowS: number }
  /** Where Prometheus scrapes: a listener of its own, never the API port. */
  readonly metrics: {
    /** Port of the metrics listener; null: metrics are counted but not served. */
    readonly port: number | null
    readonly host: string
    /** When set, a scrape must send `Authorization: Bearer <token>`. */
    readonly token: string | null
  }
  readonly requestTimeoutMs: number
  /** The public answers cache (src/http/pipeline/public-cache.ts): bytes at most (0: off), answers at most. */
  readonly publicCache: { readonly bytes: number, readonly entries: number }
  /**
   * This instance's name: its Idempotency-Key claims carry it, and at start-up it frees the claims
   * a process of the same name left when it died. Unique among instances sharing a database.
   */
  readonly instanceId: string
  /** How long an instance's heartbeat lease lasts; its claims are dead once it lapses. */
  readonly instanceLeaseMs: number
  /** How long an Idempotency-Key's record (and the response it replays) is kept. */
  readonly idempotencyTtlS: number
  /** Sojourn in the admission queue over which, once standing, requests are shed with 503; 0: no queue. */
  readonly overloadMaxWaitMs: number
  /** Requests in flight at most; one more is shed with 503 at once; 0: no bound. */
  readonly overloadMaxInFlight: number
  /** Time a client has to send the request line and headers (Node's headersTimeout). */
  readonly headersTimeoutMs: number
  /** SQLite's `synchronous` level: what a power cut may lose (docs/reliability.md). */
  readonly sqliteSynchronous: 'FULL' | 'NORMAL'
  readonly bodyLimitBytes: number
  readonly corsOrigins: readonly string[]
  readonly trustProxy: boolean
  /** Each API version's dates, by version (which versions there are is src/http/protocol/versioning.ts's to say). */
  readonly versions: Readonly<Record<number, VersionDates>>
  /**
   * Whether this instance runs the background work (every part's jobs and senders): off, it serves requests only, and another instance of
   * the deployment must run it (BACKGROUND_WORK).
   */
  readonly backgroundWork: boolean
  /** Set only by tests and benchmarks: skip creating the first admin key. */
  readonly bootstrapAdminKey: boolean
}

export type Env = Record<string, string | undefined>

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function str (env: Env, name: string): string | null {
  const v = env[name]
  return v === undefined || v.trim() === '' ? null : v.trim()
}

function int (env: Env, name: string, def: number, min: number, max: number): number {
  const raw = str(env, name)
  if (raw === null) return def
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
  const n = Number(raw)
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`)
  return n
}

function bool (env: Env, name: string, def: boolean): boolean {
  const raw = str(env, name)
  if (raw === null) return def
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false
  throw new ConfigError(name, `must be 1/true/yes or 0/false/no, got "${raw}"`)
}

function url (env: Env, name: string, protocols: string[]): string | null {
  const raw = str(env, name)
  if (raw === null) return null
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(name, 'is not a URL')
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`)
  }
  return raw
}

/**
 * The raw environment, read only through the checks every setting gets: a bad value throws a
 * ConfigError naming it. A resource's SettingsSection reads its settings with it.
 */
export interface SettingsReader {
  /** A whole number in [min, max]; `def` when unset. */
  int (name: string, def: number, min: number, max: number): number
  /** 1/true/yes or 0/false/no; `def` when unset. */
  bool (name: string, def: boolean): boolean
  /** The trimmed text; null when unset or blank. */
  str (name: string): string | null
  /** One of `choices` (exactly); `def` when unset. */
  choice<T extends string> (name: string, choices: readonly T[], def: T): T
}

/** One row of the configuration table (docs/configuration.md): `| \`name\` | \`default\` | description |`. */
export interface SettingRow {
  readonly name: string
  readonly default: string
  readonly description: string
}

/**
 * A resource's settings: read from the environment with the core's (one validation path, one
 * ConfigError at start-up for a bad value), frozen into `config[name]`, and documented by `rows`
 * (test/docs/readme.test.ts holds docs/configuration.md to them).
 */
export interface SettingsSection<K extends keyof ResourceSettings = keyof ResourceSettings> {
  readonly name: K
  read (env: SettingsReader): NonNullable<ResourceSettings[K]>
  readonly rows: readonly SettingRow[]
}

function readerOf (env: Env): SettingsReader {
  return {
    int: (name, def, min, max) => int(env, name, def, min, max),
    bool: (name, def) => bool(env, name, def),
    str: name => str(env, name),
    choice: (name, choices, def) => {
      const raw = str(env, name) ?? def
      if (!(choices as readonly string[]).includes(raw)) throw new ConfigError(name, `must be one of ${choices.join(', ')}, got "${raw}"`)
      return raw as typeof def
    },
  }
}

/** RS256 needs an RSA key, ES256 a P-256 key; anything else could never verify a token. */
function checkPublicKey (pem: string): void {
  let key
  try {
    key = createPublicKey(pem)
  } catch {
    throw new ConfigError('AUTH_JWT_PUBLIC_KEY', 'is not a readable PEM public key')
  }
  const ok = key.asymmetricKeyType === 'rsa' || (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1')
  if (!ok) throw new ConfigError('AUTH_JWT_PUBLIC_KEY', 'must be an RSA key (RS256) or a P-256 EC key (ES256)')
}

function redisKeyPrefix (env: Env): string {
  const raw = str(env, 'REDIS_KEY_PREFIX') ?? 'blog:'
  if (!/^[A-Za-z0-9:._-]{1,64}$/.test(raw)) throw new ConfigError('REDIS_KEY_PREFIX', 'must be 1–64 letters, digits or : . _ -')
  return raw
}

function sqliteSynchronous (env: Env): 'FULL' | 'NORMAL' {
  const raw = (str(env, 'SQLITE_SYNCHRONOUS') ?? 'FULL').toUpperCase()
  if (raw !== 'FULL' && raw !== 'NORMAL') throw new ConfigError('SQLITE_SYNCHRONOUS', `must be FULL or NORMAL, got "${raw}"`)
  return raw
}

// RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens.
const HOSTNAME = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

function host (env: Env): string {
  const raw = str(env, 'HOST') ?? '127.0.0.1'
  if (isIP(raw) === 0 && !HOSTNAME.test(raw)) throw new ConfigError('HOST', `must be an IP address or a host name, got "${raw}"`)
  return raw
}

/** SITE_PORT (default 3001; 0: no site), apart from PORT and METRICS_PORT, SITE_BASE_URL, and SITE_THEME_DIR (the folder over the default theme). */
function site (env: Env, hostName: string, apiPort: number, metricsPort: number | null): Config['site'] {
  const port = int(env, 'SITE_PORT', 3001, 0, 65535)
  const themeDir = str(env, 'SITE_THEME_DIR')
  if (port === 0) return Object.freeze({ port: null, baseUrl: null, themeDir })
  if (port === apiPort) throw new ConfigError('SITE_PORT', `must differ from PORT (${apiPort}): the site is served on a listener of its own`)
  if (port === metricsPort) throw new ConfigError('SITE_PORT', `must differ from METRICS_PORT (${port})`)
  const raw = url(env, 'SITE_BASE_URL', ['http:', 'https:'])
  if (raw === null) return Object.freeze({ port, baseUrl: `http://${isIP(hostName) === 6 ? `[${hostName}]` : hostName}:${port}`, themeDir })
  const parsed = new URL(raw)
  if (parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '' || parsed.pathname !== '/') {
    throw new ConfigError('SITE_BASE_URL', 'must be an origin, such as https://blog.example.com, without path, query, fragment or credentials')
  }
  return Object.freeze({ port, baseUrl: parsed.origin, themeDir })
}

/** PUBLIC_BASE_URL: an http(s) URL without query or fragment; default `http://HOST:PORT`. */
function publicBaseUrl (env: Env, hostName: string, port: number): string {
  const raw = url(env, 'PUBLIC_BASE_URL', ['http:', 'https:'])
  if (raw === null) return `http://${isIP(hostName) === 6 ? `[${hostName}]` : hostName}:${port}`
  const parsed = new URL(raw)
  if (parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new ConfigError('PUBLIC_BASE_URL', 'must be an origin with an optional path, such as https://blog.example.com, without query, fragment or credentials')
  }
  return raw.replace(/\/+$/, '')
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i

function date (env: Env, name: string): Date | null {
  const raw = str(env, name)
  if (raw === null) return null
  const d = new Date(raw)
  if (!RFC3339.test(raw) || Number.isNaN(d.getTime())) {
    throw new ConfigError(name, `must be an RFC 3339 timestamp such as 2027-01-31T00:00:00Z, got "${raw}"`)
  }
  return d
}

function versionDates (env: Env, n: number): VersionDates {
  const deprecatedAt = date(env, `API_V${n}_DEPRECATED_AT`)
  const sunsetAt = date(env, `API_V${n}_SUNSET_AT`)
  if (sunsetAt && deprecatedAt && sunsetAt < deprecatedAt) {
    throw new ConfigError(`API_V${n}_SUNSET_AT`, `must not be before API_V${n}_DEPRECATED_AT`)
  }
  if (sunsetAt && !deprecatedAt) {
    throw new ConfigError(`API_V${n}_SUNSET_AT`, `needs API_V${n}_DEPRECATED_AT: a version is deprecated before it is sunset`)
  }
  return Object.freeze({ deprecatedAt, sunsetAt })
}

function metrics (env: Env, apiPort: number, apiHost: string): Config['metrics'] {
  const port = str(env, 'METRICS_PORT') === null ? null : int(env, 'METRICS_PORT', 0, 0, 65535)
  if (port !== null && port !== 0 && port === apiPort) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${apiPort}): metrics are served on a listener of their own`)
  }
  const hostRaw = str(env, 'METRICS_HOST')
  if (hostRaw !== null && isIP(hostRaw) === 0 && !HOSTNAME.test(hostRaw)) {
    throw new ConfigError('METRICS_HOST', `must be an IP address or a host name, got "${hostRaw}"`)
  }
  const token = str(env, 'METRICS_TOKEN')
  if (token !== null && port === null) throw new ConfigError('METRICS_TOKEN', 'needs METRICS_PORT: metrics are only served on their own listener')
  if (token !== null && !/^[\x21-\x7e]{16,}$/.test(token)) {
    throw new ConfigError('METRICS_TOKEN', 'must be at least 16 visible ASCII characters (no spaces)')
  }
  return Object.freeze({ port, host: hostRaw ?? apiHost, token })
}

/**
 * Reads every setting from the environment (the only place it is read), the core's, the dates of
 * each of `versions`, and then each of `sections`, checks it, and returns a frozen Config. Throws
 * ConfigError naming the first bad setting. src/context.ts's loadConfig passes the API's versions
 * and the registry's resources' sections.
 *
 * @example
 * const config = readConfig({ PORT: '8080', DATABASE_URL: 'postgres://localhost/blog' }, [], [1, 2])
 */
export function readConfig (env: Env, sections: readonly SettingsSection[], versions: readonly number[]): Config {
  const dataDir = path.resolve(str(env, 'DATA_DIR') ?? './data')
  const dbRaw = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:', 'sqlite:'])
  if (dbRaw !== null && dbRaw.startsWith('sqlite:') && dbRaw.slice('sqlite:'.length).trim() === '') {
    throw new ConfigError('DATABASE_URL', 'sqlite: needs a file path, such as sqlite:./data/blog.db')
  }
  if (dbRaw !== null && !dbRaw.startsWith('sqlite:') && new URL(dbRaw).hostname === '') {
    throw new ConfigError('DATABASE_URL', 'a PostgreSQL URL needs a host, such as postgres://user@db.example.com:5432/blog')
  }
  const databaseUrl = dbRaw ?? `sqlite:${path.join(dataDir, 'blog.db')}`
  const storeKind = databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres'

  const logLevel = (str(env, 'LOG_LEVEL') ?? 'info').toLowerCase()
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`)

  const jwtSecret = str(env, 'AUTH_JWT_SECRET')
  if (jwtSecret !== null && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('AUTH_JWT_SECRET', 'must be at least 32 bytes long (HS256 needs a 256-bit key)')
  }
  const jwtPublicKey = str(env, 'AUTH_JWT_PUBLIC_KEY')
  if (jwtPublicKey !== null && !jwtPublicKey.includes('BEGIN PUBLIC KEY')) {
    throw new ConfigError('AUTH_JWT_PUBLIC_KEY', 'must be a PEM-encoded SPKI public key (-----BEGIN PUBLIC KEY-----)')
  }
  if (jwtPublicKey !== null) checkPublicKey(jwtPublicKey)

  const corsOrigins = (str(env, 'CORS_ORIGINS') ?? '').split(',').map(s => s.trim()).filter(Boolean)
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError('CORS_ORIGINS', `"${origin}" is not an origin such as https://example.com`)
    }
  }

  const port = int(env, 'PORT', 3000, 0, 65535)
  const apiHost = host(env)
  const metricsSettings = metrics(env, port, apiHost)
  const core: Omit<Config, keyof ResourceSettings> = {
    port,
    host: apiHost,
    publicBaseUrl: publicBaseUrl(env, apiHost, port),
    site: site(env, apiHost, port, metricsSettings.port),
    databaseUrl,
    storeKind,
    dataDir,
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    redisKeyPrefix: redisKeyPrefix(env),
    logLevel,
    migrateOnStart: bool(env, 'MIGRATE_ON_START', true),
    pgPoolMax: int(env, 'PG_POOL_MAX', 10, 1, 1000),
    pgConnectTimeoutMs: int(env, 'PG_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
    pgStatementTimeoutMs: int(env, 'PG_STATEMENT_TIMEOUT_MS', 15_000, 0, 3_600_000),
    storeBudgetMs: int(env, 'STORE_BUDGET_MS', 3_000, 100, 3_600_000),
    storeCircuitFailures: int(env, 'STORE_CIRCUIT_FAILURES', 5, 0, 1_000_000),
    auth: Object.freeze({
      jwtSecret,
      jwtPublicKey,
      jwksUrl: url(env, 'AUTH_JWKS_URL', ['https:', 'http:']),
      issuer: str(env, 'AUTH_JWT_ISSUER'),
      audience: str(env, 'AUTH_JWT_AUDIENCE'),
      clockToleranceS: int(env, 'AUTH_CLOCK_TOLERANCE_S', 30, 0, 300),
      jwksCooldownS: int(env, 'AUTH_JWKS_COOLDOWN_S', 30, 0, 3600),
    }),
    rateLimit: Object.freeze({
      max: int(env, 'RATE_LIMIT_MAX', 1000, 0, 1_000_000_000),
      windowS: int(env, 'RATE_LIMIT_WINDOW_S', 60, 1, 86_400),
    }),
    metrics: metricsSettings,
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 1, 3_600_000),
    publicCache: Object.freeze({
      bytes: int(env, 'PUBLIC_CACHE_BYTES', 64 * 1024 * 1024, 0, 4 * 1024 * 1024 * 1024),
      entries: int(env, 'PUBLIC_CACHE_ENTRIES', 20_000, 1, 10_000_000),
    }),
    instanceId: str(env, 'INSTANCE_ID') ?? `${os.hostname()}:${int(env, 'PORT', 3000, 0, 65535)}`,
    instanceLeaseMs: int(env, 'INSTANCE_LEASE_MS', 3_000, 300, 600_000),
    idempotencyTtlS: int(env, 'IDEMPOTENCY_TTL_S', 86_400, 1, 30 * 86_400),
    overloadMaxWaitMs: int(env, 'OVERLOAD_MAX_WAIT_MS', 500, 0, 60_000),
    overloadMaxInFlight: int(env, 'OVERLOAD_MAX_IN_FLIGHT', 512, 0, 1_000_000),
    headersTimeoutMs: int(env, 'HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    sqliteSynchronous: sqliteSynchronous(env),
    bodyLimitBytes: 1024 * 1024,
    corsOrigins,
    trustProxy: bool(env, 'TRUST_PROXY', false),
    versions: Object.freeze(Object.fromEntries(versions.map(n => [n, versionDates(env, n)]))),
    backgroundWork: bool(env, 'BACKGROUND_WORK', true),
    bootstrapAdminKey: bool(env, 'BOOTSTRAP_ADMIN_KEY', true),
  }
  // Then each resource's section, checked the same way, under its name.
  const reader = readerOf(env)
  const resourceSettings: Record<string, unknown> = {}
  for (const section of sections) {
    if (section.name in core || section.name in resourceSettings) throw new Error(`two parts of the settings are named ${section.name}`)
    resourceSettings[section.name] = Object.freeze(section.read(reader))
  }
  return Object.freeze({ ...core, ...resourceSettings }) as Config
}
