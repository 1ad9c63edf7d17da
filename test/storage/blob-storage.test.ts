import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { after, before, describe, it } from 'node:test'
import { type BlobStorage, BlobStorageUnavailableError } from '../../src/storage/blob-storage.ts'
import { LocalBlobStorage } from '../../src/storage/local-blob-storage.ts'
import { openS3BlobStorage, S3_TIMEOUTS } from '../../src/storage/s3-blob-storage.ts'
import { freePort } from '../helper.ts'
import { type S3Server, startS3 } from '../support/s3.ts'

/** What the suite needs of an adapter: fresh, empty storages, and one whose store is out of reach. */
export interface BlobStorageFixture {
  /** A storage with no blob in it (each call its own). */
  open (): Promise<BlobStorage>
  /** The same kind of storage, with its store out of reach; absent for adapters that cannot be. */
  unreachable?: () => Promise<BlobStorage>
  close (): Promise<void>
}

/**
 * An unreachable store fails a call within this (measured: tens of milliseconds against a closed
 * port). The adapter's own bound is CONNECT_TIMEOUT_MS per attempt; the rest is room for a busy
 * test machine.
 */
const UNREACHABLE_WITHIN_MS = 3_000
/** Past one page of a listing: S3 answers at most 1 000 keys a page. */
const MANY_KEYS = 1_050
const MiB = 1024 * 1024

const text = (s: string) => Buffer.from(s, 'utf8')
const meta = (length?: number) => ({ contentType: 'application/octet-stream', ...(length === undefined ? {} : { length }) })
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

async function read (blobs: BlobStorage, key: string, range?: { start: number, end: number }): Promise<Buffer | null> {
  const body = await blobs.get(key, range)
  return body === null ? null : await buffer(body)
}

async function allKeys (blobs: BlobStorage): Promise<string[]> {
  const keys: string[] = []
  for await (const key of blobs.keys()) keys.push(key)
  return keys
}

/** A body of `chunks` × `size` bytes of `seed`, then an error (the client that went away). */
function failingAfter (chunks: number, size: number, err: Error): Readable {
  return Readable.from((async function * () {
    for (let i = 0; i < chunks; i++) yield Buffer.alloc(size, i)
    throw err
  })())
}

async function timed<T> (fn: () => Promise<T>): Promise<{ ms: number, result: PromiseSettledResult<T> }> {
  const t0 = performance.now()
  const [result] = await Promise.allSettled([fn()])
  return { ms: performance.now() - t0, result: result! }
}

type Timed = Awaited<ReturnType<typeof timed>>

function assertUnavailable (what: string, r: Timed, withinMs: number): void {
  assert.equal(r.result.status, 'rejected', `${what} did not fail`)
  const reason = (r.result as PromiseRejectedResult).reason as Error
  assert.ok(reason instanceof BlobStorageUnavailableError, `${what} failed with ${reason.name}: ${reason.message}`)
  assert.ok(r.ms < withinMs, `${what} took ${Math.round(r.ms)} ms (bound ${withinMs} ms)`)
}

/**
 * The behaviour every BlobStorage adapter owes, run against one adapter. A new adapter is one line
 * in ADAPTERS below.
 */
export function blobStorageSuite (name: string, fixture: () => Promise<BlobStorageFixture>): void {
  describe(`blob storage [${name}]`, () => {
    let f: BlobStorageFixture
    let blobs: BlobStorage
    before(async () => {
      f = await fixture()
      blobs = await f.open()
    })
    after(async () => {
      await blobs.close()
      await f.close()
    })

    it('gives back the bytes put, whole and by inclusive ranges', async () => {
      const bytes = randomBytes(1000)
      await blobs.put('ranges', bytes, meta(bytes.length))
      assert.deepEqual(await read(blobs, 'ranges'), bytes)
      assert.deepEqual(await read(blobs, 'ranges', { start: 0, end: 0 }), bytes.subarray(0, 1), 'the first byte')
      assert.deepEqual(await read(blobs, 'ranges', { start: 999, end: 999 }), bytes.subarray(999), 'the last byte')
      assert.deepEqual(await read(blobs, 'ranges', { start: 100, end: 599 }), bytes.subarray(100, 600), 'the middle')
      assert.deepEqual(await read(blobs, 'ranges', { start: 0, end: 999 }), bytes, 'every byte')
    })

    it('reads the bytes put in one buffer, whole and by inclusive ranges, and null for a key that holds none', async () => {
      const bytes = randomBytes(1000)
      await blobs.put('whole', bytes, meta(bytes.length))
      assert.deepEqual(await blobs.read('whole'), bytes)
      assert.deepEqual(await blobs.read('whole', { start: 0, end: 0 }), bytes.subarray(0, 1), 'the first byte')
      assert.deepEqual(await blobs.read('whole', { start: 999, end: 999 }), bytes.subarray(999), 'the last byte')
      assert.deepEqual(await blobs.read('whole', { start: 100, end: 599 }), bytes.subarray(100, 600), 'the middle')
      assert.deepEqual(await blobs.read('whole', { start: 0, end: 999 }), bytes, 'every byte')
      await blobs.put('nothing', Buffer.alloc(0), meta(0))
      assert.deepEqual(await blobs.read('nothing'), Buffer.alloc(0))
      assert.equal(await blobs.read('never-put'), null)
      assert.equal(await blobs.read('never-put', { start: 0, end: 0 }), null)
    })

    it('reads a blob of several MiB whole, as a stream gives it', async () => {
      const bytes = randomBytes(3 * MiB + 7)
      await blobs.put('several', bytes, meta(bytes.length))
      const whole = await blobs.read('several')
      assert.equal(whole?.length, bytes.length)
      assert.equal(sha256(whole!), sha256(bytes))
      assert.deepEqual(await blobs.read('several', { start: MiB, end: 2 * MiB }), bytes.subarray(MiB, 2 * MiB + 1))
    })

    it('puts a stream of unknown length, and a Buffer without a declared length', async () => {
      await blobs.put('stream', Readable.from([text('hello, '), text('world')]), meta())
      assert.equal((await read(blobs, 'stream'))?.toString(), 'hello, world')
      await blobs.put('buffer', text('plain'), meta())
      assert.equal((await read(blobs, 'buffer'))?.toString(), 'plain')
    })

    it('tells the length of a blob, and null for a key that holds none', async () => {
      await blobs.put('stat', Buffer.alloc(4321, 1), meta(4321))
      assert.deepEqual(await blobs.stat('stat'), { bytes: 4321 })
      await blobs.put('empty', Buffer.alloc(0), meta(0))
      assert.deepEqual(await blobs.stat('empty'), { bytes: 0 })
      assert.equal(await blobs.stat('never-put'), null)
      assert.equal(await blobs.get('never-put'), null)
      assert.equal(await blobs.get('never-put', { start: 0, end: 0 }), null)
    })

    it('deletes a blob, and deleting one that is not there is not an error', async () => {
      await blobs.put('doomed', text('bye'), meta(3))
      await blobs.delete('doomed')
      assert.equal(await blobs.stat('doomed'), null)
      assert.equal(await blobs.get('doomed'), null)
      assert.ok(!(await allKeys(blobs)).includes('doomed'))
      await blobs.delete('doomed')
      await blobs.delete('never-put')
    })

    it('keeps a blob whole when the same key is put again', async () => {
      const bytes = randomBytes(64)
      await blobs.put('twice', bytes, meta(64))
      await blobs.put('twice', Readable.from([bytes]), meta(64))
      assert.deepEqual(await read(blobs, 'twice'), bytes)
    })

    it(`lists every key exactly once, past one page (${MANY_KEYS} keys)`, async () => {
      const own = await f.open()
      try {
        const keys = Array.from({ length: MANY_KEYS }, (_, i) => `ab/${String(i).padStart(5, '0')}`)
        for (let i = 0; i < keys.length; i += 50) {
          await Promise.all(keys.slice(i, i + 50).map(async k => { await own.put(k, text(k), meta(k.length)) }))
        }
        const listed = await allKeys(own)
        assert.equal(listed.length, MANY_KEYS)
        assert.deepEqual([...listed].sort(), keys)
      } finally {
        await own.close()
      }
    })

    it('stores nothing when the body fails before its end, and rethrows the body\'s error', async () => {
      const boom = new Error('the client went away')
      await assert.rejects(blobs.put('cut-short', failingAfter(3, 1000, boom), meta()), err => err === boom)
      assert.equal(await blobs.stat('cut-short'), null)
      // Past the first 8 MiB, so that S3 has begun a multipart upload, which must then be aborted.
      const late = new Error('the client went away late')
      await assert.rejects(blobs.put('cut-late', failingAfter(10, MiB, late), meta()), err => err === late)
      assert.equal(await blobs.stat('cut-late'), null)
      assert.equal(await blobs.get('cut-late'), null)
      const keys = await allKeys(blobs)
      assert.ok(!keys.includes('cut-short') && !keys.includes('cut-late'), `listed: ${keys.join(' ')}`)
      // The key is not spoilt: a whole body puts as usual.
      await blobs.put('cut-late', text('whole'), meta(5))
      assert.equal((await read(blobs, 'cut-late'))?.toString(), 'whole')
    })

    it('stores nothing when the body is shorter or longer than its declared length', async () => {
      await blobs.put('exact', Readable.from([Buffer.alloc(10)]), meta(10))
      assert.deepEqual(await blobs.stat('exact'), { bytes: 10 })
      await assert.rejects(blobs.put('short', Readable.from([Buffer.alloc(9)]), meta(10)))
      await assert.rejects(blobs.put('long', Readable.from([Buffer.alloc(11)]), meta(10)))
      await assert.rejects(blobs.put('long-buffer', Buffer.alloc(11), meta(10)))
      for (const key of ['short', 'long', 'long-buffer']) assert.equal(await blobs.stat(key), null, key)
    })

    it('streams a large body in and out (20 MiB, unknown length, in 64 KiB chunks)', async () => {
      const bytes = randomBytes(20 * MiB)
      const chunk = 64 * 1024
      const chunks = Array.from({ length: bytes.length / chunk }, (_, i) => bytes.subarray(i * chunk, (i + 1) * chunk))
      await blobs.put('large', Readable.from(chunks), meta())
      assert.deepEqual(await blobs.stat('large'), { bytes: bytes.length })
      assert.equal(sha256((await read(blobs, 'large'))!), sha256(bytes))
      // Across the border of two uploaded parts (8 MiB).
      const start = 8 * MiB - 10
      assert.deepEqual(await read(blobs, 'large', { start, end: start + 19 }), bytes.subarray(start, start + 20))
    })

    const unreachable = `fails every call with BlobStorageUnavailableError within ${UNREACHABLE_WITHIN_MS} ms when the store is out of reach`
    it(unreachable, async (t) => {
      if (f.unreachable === undefined) {
        t.skip(`${name} has no store to lose`)
        return
      }
      const gone = await f.unreachable()
      try {
        const calls: [string, () => Promise<unknown>][] = [
          ['put', async () => { await gone.put('k', text('x'), meta(1)) }],
          ['put of a stream', async () => { await gone.put('k', Readable.from([text('x')]), meta()) }],
          ['get', async () => await gone.get('k')],
          ['ranged get', async () => await gone.get('k', { start: 0, end: 0 })],
          ['read', async () => await gone.read('k')],
          ['ranged read', async () => await gone.read('k', { start: 0, end: 0 })],
          ['stat', async () => await gone.stat('k')],
          ['delete', async () => { await gone.delete('k') }],
          ['keys', async () => await allKeys(gone)],
        ]
        for (const [what, call] of calls) assertUnavailable(what, await timed(call), UNREACHABLE_WITHIN_MS)
      } finally {
        await gone.close()
      }
    })
  })
}

/** The S3 adapter on a real S3-protocol server (s3rver), each storage under a prefix of its own. */
async function s3Fixture (): Promise<BlobStorageFixture> {
  const s3 = await startS3()
  let n = 0
  return {
    open: async () => await openS3BlobStorage(s3.options(`run-${++n}/`)),
    // Nothing listens on the port: every connection is refused.
    unreachable: async () => await openS3BlobStorage({ ...s3.options(), endpoint: `http://127.0.0.1:${await freePort()}` }),
    close: async () => { await s3.close() },
  }
}

/** The local adapter, each storage a folder of its own under one temporary folder. */
async function localFixture (): Promise<BlobStorageFixture> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-blobs-'))
  let n = 0
  return {
    open: async () => await LocalBlobStorage.open(path.join(root, `run-${++n}`)),
    close: async () => { fs.rmSync(root, { recursive: true, force: true }) },
  }
}

const ADAPTERS: readonly (readonly [string, () => Promise<BlobStorageFixture>])[] = [
  ['local', localFixture],
  ['s3', s3Fixture],
]

for (const [name, fixture] of ADAPTERS) blobStorageSuite(name, fixture)

describe('S3 blob storage', () => {
  let s3: S3Server
  before(async () => { s3 = await startS3() })
  after(async () => { await s3.close() })

  it('keeps each prefix to itself: keys are listed and read under their own prefix only', async () => {
    const a = await openS3BlobStorage(s3.options('tenant-a/'))
    const b = await openS3BlobStorage(s3.options('tenant-b/'))
    try {
      await a.put('same', text('a'), meta(1))
      await b.put('same', text('b'), meta(1))
      await a.put('only-a', text('a'), meta(1))
      assert.deepEqual((await allKeys(a)).sort(), ['only-a', 'same'])
      assert.deepEqual(await allKeys(b), ['same'])
      assert.equal((await read(b, 'same'))?.toString(), 'b')
      assert.equal(await b.stat('only-a'), null)
    } finally {
      await a.close()
      await b.close()
    }
  })

  it('aborts the multipart upload that a failing body began, and never completes it', async () => {
    // A recording proxy in front of the server: which S3 calls the adapter made.
    const calls: string[] = []
    const target = new URL(s3.endpoint)
    const proxy = http.createServer((req, res) => {
      calls.push(`${req.method} ${req.url}`)
      const to = { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }
      const upstream = http.request(to, answer => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      upstream.on('error', () => { res.destroy() })
      req.pipe(upstream)
    })
    await new Promise<void>(resolve => proxy.listen(0, '127.0.0.1', resolve))
    const { port } = proxy.address() as net.AddressInfo
    const blobs = await openS3BlobStorage({ ...s3.options('abort/'), endpoint: `http://127.0.0.1:${port}` })
    try {
      const boom = new Error('gone after 9 MiB')
      await assert.rejects(blobs.put('half', failingAfter(9, MiB, boom), meta()), err => err === boom)
      const multipart = (verb: string, query: RegExp) =>
        calls.filter(c => c.startsWith(`${verb} /${s3.bucket}/abort/half?`) && query.test(c))
      assert.equal(multipart('POST', /[?&]uploads(=|&|$)/).length, 1, `began: ${calls.join(', ')}`)
      assert.ok(multipart('PUT', /[?&]partNumber=1&/).length >= 1, 'sent its first part')
      assert.equal(multipart('DELETE', /[?&]uploadId=/).length, 1, 'aborted it')
      assert.equal(multipart('POST', /[?&]uploadId=/).length, 0, 'never completed it')
      assert.equal(await blobs.stat('half'), null)
    } finally {
      await blobs.close()
      proxy.closeAllConnections()
      await new Promise(resolve => proxy.close(resolve))
    }
  })

  it('refuses a range outside the blob or backwards with a RangeError, not as an unreachable store', async () => {
    const blobs = await openS3BlobStorage(s3.options('ranges/'))
    try {
      await blobs.put('ten', Buffer.alloc(10), meta(10))
      await assert.rejects(blobs.get('ten', { start: 10, end: 10 }), RangeError)
      await assert.rejects(blobs.get('ten', { start: 5, end: 4 }), RangeError)
      await assert.rejects(blobs.get('ten', { start: -1, end: 4 }), RangeError)
    } finally {
      await blobs.close()
    }
  })

  it('answers credentials the store refuses with BlobStorageUnavailableError at once', async () => {
    const refused = await openS3BlobStorage({ ...s3.options(), accessKeyId: 'NOT-A-KEY', secretAccessKey: 'wrong' })
    try {
      assertUnavailable('put', await timed(async () => { await refused.put('k', text('x'), meta(1)) }), UNREACHABLE_WITHIN_MS)
      assertUnavailable('get', await timed(async () => await refused.get('k')), UNREACHABLE_WITHIN_MS)
      assertUnavailable('stat', await timed(async () => await refused.stat('k')), UNREACHABLE_WITHIN_MS)
      assertUnavailable('keys', await timed(async () => await allKeys(refused)), UNREACHABLE_WITHIN_MS)
    } finally {
      await refused.close()
    }
  })

  it('answers a store that takes the connection and then says nothing within its timeouts', async () => {
    // Accepts, reads, never answers: the case connection timeouts alone would not catch.
    const sockets = new Set<net.Socket>()
    const silent = net.createServer(socket => { sockets.add(socket); socket.resume() })
    await new Promise<void>(resolve => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as net.AddressInfo
    const hung = await openS3BlobStorage({ ...s3.options(), endpoint: `http://127.0.0.1:${port}` })
    // Each of the attempts waits out its timeout; the rest is room for a busy machine.
    const { MAX_ATTEMPTS, IDLE_TIMEOUT_MS, FIRST_BYTE_TIMEOUT_MS } = S3_TIMEOUTS
    const bound = MAX_ATTEMPTS * Math.max(IDLE_TIMEOUT_MS, FIRST_BYTE_TIMEOUT_MS) + 2_000
    try {
      const [put, get] = await Promise.all([
        timed(async () => { await hung.put('k', text('x'), meta(1)) }),
        timed(async () => await hung.get('k')),
      ])
      assertUnavailable('put', put, bound)
      assertUnavailable('get', get, bound)
    } finally {
      await hung.close()
      for (const s of sockets) s.destroy()
      await new Promise(resolve => silent.close(resolve))
    }
  })

  it('lets a slow reader pause a body longer than the write and first-byte timeouts without losing it', async () => {
    const blobs = await openS3BlobStorage(s3.options('slow-reader/'))
    try {
      const bytes = randomBytes(4 * MiB)
      await blobs.put('big', bytes, meta(bytes.length))
      const chunks: Buffer[] = []
      const body = (await blobs.get('big'))![Symbol.asyncIterator]() as AsyncIterator<Buffer>
      chunks.push((await body.next()).value)
      // Real time, on purpose: it is the SDK's own socket timers that must not fire.
      await new Promise(resolve => setTimeout(resolve, S3_TIMEOUTS.IDLE_TIMEOUT_MS + 500))
      for (let next = await body.next(); next.done !== true; next = await body.next()) chunks.push(next.value)
      assert.equal(sha256(Buffer.concat(chunks)), sha256(bytes))
    } finally {
      await blobs.close()
    }
  })
})
