import { ConfigError, type SettingsSection } from '../../config.ts'

/** The imports' settings: `config.imports`. */
export interface ImportSettings {
  /** The largest file `POST /imports` takes, in bytes. */
  readonly maxBytes: number
  readonly leaseMs: number
  readonly maxAttempts: number
  readonly pollMs: number
  /** Posts written per transaction. */
  readonly batchSize: number
}

declare module '../../config.ts' { interface ResourceSettings { readonly imports: ImportSettings } }

export const importSettings: SettingsSection<'imports'> = {
  name: 'imports',
  read: env => {
    // Fetching images needs a place to keep them (media), which this build of the service lacks:
    // a setting that would silently do nothing is refused instead.
    if (env.bool('IMPORT_FETCH_IMAGES', false)) throw new ConfigError('IMPORT_FETCH_IMAGES', 'cannot be true: this build of the service has no media library to fetch images into; leave it false (image URLs stay as they are)')
    return {
      maxBytes: env.int('IMPORT_MAX_BYTES', 100 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      leaseMs: env.int('IMPORT_LEASE_MS', 30_000, 100, 3_600_000),
      maxAttempts: env.int('IMPORT_MAX_ATTEMPTS', 3, 1, 100),
      pollMs: env.int('IMPORT_POLL_MS', 500, 10, 60_000),
      batchSize: env.int('IMPORT_BATCH_SIZE', 10, 1, 1000),
    }
  },
  rows: [
    { name: 'IMPORT_MAX_BYTES', default: '104857600', description: 'The largest WordPress or Ghost export `POST /imports` takes (100 MiB); a larger one is answered 413 before it is stored ([docs/import.md](docs/import.md)).' },
    { name: 'IMPORT_FETCH_IMAGES', default: 'false', description: 'Whether an import fetches the images of the posts into media. This build has no media library: `true` stops start-up; image URLs stay as they are.' },
    { name: 'IMPORT_LEASE_MS', default: '30000', description: 'How long a worker\'s claim on an import lasts unless renewed (every batch renews it); an import whose worker died is taken up by another instance after it, from its last batch.' },
    { name: 'IMPORT_MAX_ATTEMPTS', default: '3', description: 'Runs an import may start (a crash or a failure ends one) before it is marked `failed`.' },
    { name: 'IMPORT_POLL_MS', default: '500', description: 'How often each instance\'s worker looks for queued imports (an import made on the instance wakes it at once).' },
    { name: 'IMPORT_BATCH_SIZE', default: '10', description: 'Posts an import writes per transaction (with their tags, slugs, revisions and events). On SQLite a transaction holds the event loop while it runs: small batches keep requests served during an import, and cost no speed.' },
  ],
}
