import type { BlobStorage, BlobStorageOptions } from './blob-storage.ts'
import { LocalBlobStorage } from './local-blob-storage.ts'

/** Opens the storage `options` name: a folder (`local`) or an S3-compatible bucket (`s3`). */
export async function openBlobStorage (options: BlobStorageOptions): Promise<BlobStorage> {
  if (options.kind === 'local') return await LocalBlobStorage.open(options.dir)
  // The S3 adapter (s3-blob-storage.ts) is opened here once it is part of the build.
  throw new Error(`blob storage "${options.kind}" is not available in this build`)
}
