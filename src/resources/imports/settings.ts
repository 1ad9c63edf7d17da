import type { SettingsSection } from '../../config.ts'

/** The imports' settings: `config.imports`. */
export interface ImportSettings {
  /** The largest file `POST /imports` takes, in bytes. */
  readonly maxBytes: number
  readonly leaseMs: number
  readonly maxAttempts: number
  readonly pollMs: number
  /** Posts written per transaction; null: the store's own (2 on SQLite, 10 on PostgreSQL). */
  readonly batchSize: number | null
  /** Whether the images of imported posts are fetched into media. */
  readonly fetchImages: boolean
  /** The largest image fetched, in bytes. */
  readonly imageMaxBytes: number
  /** How long fetching one image may take, redirects and body included. */
  readonly imageTimeoutMs: number
  readonly imageMaxRedirects: number
  /** Whether posts are converted (HTML to Markdown) on a thread of their own rather than the event loop. */
  readonly workerThread: boolean
}

declare module '../../config.ts' { interface ResourceSettings { readonly imports: ImportSettings } }

export const importSettings: SettingsSection<'imports'> = {
  name: 'imports',
  read: env => {
    return {
      maxBytes: env.int('IMPORT_MAX_BYTES', 100 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      leaseMs: env.int('IMPORT_LEASE_MS', 30_000, 100, 3_600_000),
      maxAttempts: env.int('IMPORT_MAX_ATTEMPTS', 3, 1, 100),
      pollMs: env.int('IMPORT_POLL_MS', 500, 10, 60_000),
      batchSize: env.str('IMPORT_BATCH_SIZE') === null ? null : env.int('IMPORT_BATCH_SIZE', 10, 1, 1000),
      fetchImages: env.bool('IMPORT_FETCH_IMAGES', false),
      imageMaxBytes: env.int('IMPORT_IMAGE_MAX_BYTES', 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      imageTimeoutMs: env.int('IMPORT_IMAGE_TIMEOUT_MS', 15_000, 100, 600_000),
      imageMaxRedirects: env.int('IMPORT_IMAGE_MAX_REDIRECTS', 5, 0, 20),
      workerThread: env.bool('IMPORT_WORKER_THREAD', false),
    }
  },
  rows: [
    { name: 'IMPORT_MAX_BYTES', default: '104857600', description: 'The largest WordPress or Ghost export `POST /imports` takes (100 MiB); a larger one is answered 413 before it is stored ([import.md](import.md)).' },
    { name: 'IMPORT_FETCH_IMAGES', default: 'false', description: 'Whether an import fetches the images of its posts (feature images and the content\'s `<img>`) into media, the posts then pointing at them; under the rules of webhooks\' URLs (no private, link-local or reserved address; loopback only with `WEBHOOK_ALLOW_LOOPBACK`). An image that cannot be fetched is a warning; the post keeps its URL ([import.md](import.md)).' },
    { name: 'IMPORT_IMAGE_MAX_BYTES', default: '20971520', description: 'With `IMPORT_FETCH_IMAGES`: the largest image an import fetches (20 MiB); a larger one is dropped as soon as its `Content-Length` or its bytes say so (and `MEDIA_MAX_BYTES` holds too).' },
    { name: 'IMPORT_IMAGE_TIMEOUT_MS', default: '15000', description: 'With `IMPORT_FETCH_IMAGES`: how long fetching one image may take, its redirects and body included.' },
    { name: 'IMPORT_IMAGE_MAX_REDIRECTS', default: '5', description: 'With `IMPORT_FETCH_IMAGES`: redirects followed for one image (each to an address the same rules allow).' },
    { name: 'IMPORT_LEASE_MS', default: '30000', description: 'How long a worker\'s claim on an import lasts unless renewed (every batch renews it); an import whose worker died is taken up by another instance after it, from its last batch.' },
    { name: 'IMPORT_MAX_ATTEMPTS', default: '3', description: 'Runs an import may start (a crash or a failure ends one) before it is marked `failed`.' },
    { name: 'IMPORT_POLL_MS', default: '500', description: 'How often each instance\'s worker looks for queued imports (an import made on the instance wakes it at once).' },
    { name: 'IMPORT_WORKER_THREAD', default: 'false', description: 'Whether an import converts its posts (HTML to Markdown) on a thread of its own, up to two batches ahead of the batch being written, rather than on the event loop: faster on SQLite, for some 30 MB more memory ([import.md](import.md)).' },
    { name: 'IMPORT_BATCH_SIZE', default: '2 on SQLite, 10 on PostgreSQL', description: 'Posts an import writes per transaction (with their tags, slugs, revisions and events). On SQLite a transaction holds the event loop while it runs: small batches keep requests served during an import (10 000 posts: read p99 2.5× idle at 2, 6× at 10; 38 s against 29 s); on PostgreSQL larger batches save round trips.' },
  ],
}
