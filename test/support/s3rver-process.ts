import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'

/**
 * s3rver in a process of its own, started by test/support/s3.ts with `--openssl-legacy-provider`:
 * s3rver seals ListObjectsV2 continuation tokens with DES, which OpenSSL 3 (Node 17 and later)
 * offers only through its legacy provider, so in a test's own process any listing longer than one
 * page would fail with a 500. (s3rver answers AbortMultipartUpload 405, so an aborted upload's parts
 * stay in its folder; test/storage/blob-storage.test.ts checks that the abort is sent.) Arguments: the folder for its objects, the bucket to make. Prints
 * `{"port":…}` once listening on a random loopback port; exits when its parent closes stdin.
 */
type S3rverClass = new (options: Record<string, unknown>) => { run (): Promise<AddressInfo>, close (): Promise<void> }

const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass
const [directory, bucket] = process.argv.slice(2)
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory,
  resetOnClose: false,
  vhostBuckets: false,
  configureBuckets: [{ name: bucket }],
})
const { port } = await server.run()
process.stdout.write(JSON.stringify({ port }) + '\n')
process.stdin.resume()
process.stdin.on('close', () => { process.exit(0) })
