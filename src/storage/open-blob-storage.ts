import type { BlobStorage, BlobStorageOptions } from './blob-storage.ts'
import { LocalBlobStorage } from './local-blob-storage.ts'
import { openS3BlobStorage } from './s3-blob-storage.ts'

/** Opens the storage `options` name: a folder (`local`) or an S3-compatible bucket (`s3`). */
export async function openBlobStorage (options: BlobStorageOptions): Promise<BlobStorage> {
  if (options.kind === 'local') return await LocalBlobStorage.open(options.dir)
  return openS3BlobStorage(options)
}
