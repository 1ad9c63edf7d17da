import path from 'node:path'
import { ConfigError, type SettingsSection } from '../../config.ts'
import type { BlobStorageOptions } from '../../storage/blob-storage.ts'

/** The media's settings: `config.media`. */
export interface MediaSettings {
  /** Where the stored bytes live. */
  readonly storage: BlobStorageOptions
  /** Larger uploads are refused with 413 before they are read whole. */
  readonly maxBytes: number
  /** Images with more pixels are refused before any decoder runs. */
  readonly maxPixels: number
  /** The widths `/image` offers, ascending. */
  readonly widths: readonly number[]
  /** Unfinished resumable uploads are removed after this many hours. */
  readonly uploadExpiryH: number
  /** Small files and variants kept in memory for reads, at most this many bytes in all (0: none). */
  readonly cacheBytes: number
}

declare module '../../config.ts' { interface ResourceSettings { readonly media: MediaSettings } }

const DEFAULT_WIDTHS = '320,640,960,1280,1920,2560'

function widthsOf (raw: string): number[] {
  const widths = raw.split(',').map(s => s.trim())
  if (widths.some(w => !/^[1-9]\d{0,4}$/.test(w))) throw new ConfigError('MEDIA_WIDTHS', `must be a comma list of widths from 1 to 99999, got "${raw}"`)
  const sorted = [...new Set(widths.map(Number))].sort((a, b) => a - b)
  if (sorted.length > 20) throw new ConfigError('MEDIA_WIDTHS', 'may name at most 20 widths')
  return sorted
}

export const mediaSettings: SettingsSection<'media'> = {
  name: 'media',
  read: env => {
    const kind = env.choice('MEDIA_STORAGE', ['local', 's3'], 'local')
    let storage: BlobStorageOptions
    if (kind === 'local') {
      storage = { kind, dir: path.join(path.resolve(env.str('DATA_DIR') ?? './data'), 'media') }
    } else {
      const bucket = env.str('S3_BUCKET')
      if (bucket === null) throw new ConfigError('S3_BUCKET', 'is required with MEDIA_STORAGE=s3')
      const endpoint = env.str('S3_ENDPOINT')
      if (endpoint !== null && !/^https?:\/\/[^\s/]+/.test(endpoint)) throw new ConfigError('S3_ENDPOINT', 'must be an http:// or https:// URL')
      const accessKeyId = env.str('S3_ACCESS_KEY_ID')
      const secretAccessKey = env.str('S3_SECRET_ACCESS_KEY')
      if ((accessKeyId === null) !== (secretAccessKey === null)) throw new ConfigError('S3_SECRET_ACCESS_KEY', 'and S3_ACCESS_KEY_ID are set together or not at all')
      storage = {
        kind,
        bucket,
        region: env.str('S3_REGION') ?? 'us-east-1',
        ...(endpoint === null ? {} : { endpoint }),
        ...(accessKeyId === null || secretAccessKey === null ? {} : { accessKeyId, secretAccessKey }),
        forcePathStyle: env.bool('S3_FORCE_PATH_STYLE', false),
      }
    }
    return {
      storage,
      maxBytes: env.int('MEDIA_MAX_BYTES', 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      maxPixels: env.int('MEDIA_MAX_PIXELS', 50_000_000, 1, 1_000_000_000),
      widths: widthsOf(env.str('MEDIA_WIDTHS') ?? DEFAULT_WIDTHS),
      uploadExpiryH: env.int('UPLOAD_EXPIRY_H', 24, 1, 24 * 365),
      cacheBytes: env.int('MEDIA_CACHE_MB', 32, 0, 64 * 1024) * 1024 * 1024,
    }
  },
  rows: [
    { name: 'MEDIA_STORAGE', default: 'local', description: 'Where uploaded images are kept: `local` (files under `DATA_DIR/media`; with PostgreSQL, on this instance only) or `s3` (any S3-compatible object store).' },
    { name: 'S3_BUCKET', default: 'unset', description: 'With `MEDIA_STORAGE=s3`: the bucket (required).' },
    { name: 'S3_REGION', default: 'us-east-1', description: 'With `MEDIA_STORAGE=s3`: the region.' },
    { name: 'S3_ENDPOINT', default: 'unset', description: 'With `MEDIA_STORAGE=s3`: the URL of a store other than AWS (MinIO, R2, …).' },
    { name: 'S3_ACCESS_KEY_ID', default: 'unset', description: 'With `MEDIA_STORAGE=s3`: the access key; unset, the SDK\'s usual chain (environment, instance role) is used.' },
    { name: 'S3_SECRET_ACCESS_KEY', default: 'unset', description: 'With `MEDIA_STORAGE=s3`: the secret of that key.' },
    { name: 'S3_FORCE_PATH_STYLE', default: 'false', description: 'With `MEDIA_STORAGE=s3`: address the bucket in the path, not the host name (most stores other than AWS).' },
    { name: 'MEDIA_MAX_BYTES', default: '20971520', description: 'Largest upload in bytes; a larger one is refused with 413 before it is read whole.' },
    { name: 'MEDIA_MAX_PIXELS', default: '50000000', description: 'Largest image in pixels (width × height × frames), checked from its header before any decoding: 422 `IMAGE_UNREADABLE`.' },
    { name: 'MEDIA_WIDTHS', default: DEFAULT_WIDTHS, description: 'The widths `/media/{id}/image?w=` offers (and `srcset` lists).' },
    { name: 'MEDIA_CACHE_MB', default: '32', description: 'Memory for the most read files and variants of at most 1 MiB each, served without touching the storage (`0`: none). Blobs never change under their digest, so nothing is ever stale.' },
    { name: 'UPLOAD_EXPIRY_H', default: '24', description: 'Unfinished resumable uploads (`/uploads`) are removed after this many hours.' },
  ],
}
