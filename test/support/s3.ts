import { type ChildProcess, spawn } from 'node:child_process'
import fs from 'node:fs'
import { once } from 'node:events'
import os from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import type { BlobStorageOptions } from '../../src/storage/blob-storage.ts'

/** s3rver's one account: other keys are refused as S3 refuses them (403 InvalidAccessKeyId). */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const

export interface S3Server {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string
  readonly bucket: string
  /** Settings of an S3 blob storage on this server, under `prefix` when given. */
  options (prefix?: string): Extract<BlobStorageOptions, { kind: 's3' }>
  close (): Promise<void>
}

/**
 * A real S3-protocol server (s3rver) on a random loopback port, keeping its objects in a temporary
 * folder, with one bucket made; `close()` stops it and removes the folder. It runs in a child
 * process of this Node (test/support/s3rver-process.ts says why), which ends with this one.
 *
 * @example
 * const s3 = await startS3()
 * const blobs = openS3BlobStorage(s3.options('run-1/'))
 */
export async function startS3 (bucket = 'blog-test'): Promise<S3Server> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-s3-'))
  const child: ChildProcess = spawn(process.execPath, [
    '--openssl-legacy-provider',
    // Resolved from here, so that the child finds tsx whatever its working directory.
    '--import', import.meta.resolve('tsx'),
    path.join(import.meta.dirname, 's3rver-process.ts'),
    directory,
    bucket,
  ], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    lines.once('line', line => { resolve((JSON.parse(line) as { port: number }).port) })
    child.once('exit', code => { reject(new Error(`s3rver exited (${code}) before it listened`)) })
  })
  const endpoint = `http://127.0.0.1:${port}`
  return {
    endpoint,
    bucket,
    options: prefix => ({
      kind: 's3',
      bucket,
      region: 'us-east-1',
      endpoint,
      ...S3RVER_CREDENTIALS,
      forcePathStyle: true,
      ...(prefix !== undefined ? { prefix } : {}),
    }),
    async close () {
      child.stdin!.end()
      await exited
      fs.rmSync(directory, { recursive: true, force: true })
    },
  }
}
