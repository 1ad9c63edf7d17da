import type { BlobStorage, BlobStorageOptions } from './blob-storage.ts'
import { LocalBlobStorage } from './local-blob-storage.ts'

/** Opens the storage `options` name: a folder (`local`) or an S3-compatible bucket (`s3`). */
export async function openBlobStorage (options: BlobStorageOptions): Promise<BlobStorage> {
  if (options.kind === 'local') return await LocalBlobStorage.open(options.dir)
  // The AWS SDK is loaded only where blobs are kept in a bucket.
  const { openS3BlobStorage } = await import('./s3-blob-storage.ts')
  return await openS3BlobStorage(options)
}
