import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { type BlobMeta, type BlobStorage, BlobStorageUnavailableError, type ByteRange } from './blob-storage.ts'

/** Where unfinished writes go: inside the folder, so that the final rename never crosses a file system. */
const TEMPORARY = '.tmp'
/** Errors that mean the disk cannot take the write (full, over quota, read-only): not the caller's fault. */
const UNAVAILABLE = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EACCES', 'EPERM'])
/** Keys are paths below the folder: lower-case hex, digits, `/`, `.`, `-` and `_`, never `..` or a leading `/`. */
const KEY = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*(?:\/[a-z0-9_-]+(?:\.[a-z0-9_-]+)*)*$/
/** Temporary files older than this are left by a process that died mid-write, and removed at open. */
const STALE_TEMPORARY_MS = 24 * 3600_000

function unavailable (err: unknown): Error {
  const code = (err as NodeJS.ErrnoException).code
  if (code !== undefined && UNAVAILABLE.has(code)) return new BlobStorageUnavailableError(`the disk refused the write (${code})`, { cause: err })
  return err as Error
}

/**
 * Blobs as files under one folder (`DATA_DIR/…`). A write goes to a temporary file, is synced, and
 * renamed onto its key (then the folder is synced): a crash leaves a temporary file (removed at the
 * next open), never part of a blob under its key.
 */
export class LocalBlobStorage implements BlobStorage {
  readonly kind = 'local'

  private constructor (private readonly dir: string) {}

  static async open (dir: string): Promise<LocalBlobStorage> {
    const tmp = path.join(dir, TEMPORARY)
    await fsp.mkdir(tmp, { recursive: true })
    const now = Date.now()
    for (const name of await fsp.readdir(tmp)) {
      const p = path.join(tmp, name)
      const st = await fsp.stat(p).catch(() => null)
      if (st !== null && now - st.mtimeMs > STALE_TEMPORARY_MS) await fsp.rm(p, { force: true })
    }
    return new LocalBlobStorage(dir)
  }

  private pathOf (key: string): string {
    if (!KEY.test(key)) throw new Error(`not a blob key: ${JSON.stringify(key)}`)
    return path.join(this.dir, key)
  }

  async put (key: string, body: Readable | Buffer, meta: BlobMeta): Promise<void> {
    const final = this.pathOf(key)
    const tmp = path.join(this.dir, TEMPORARY, `${randomBytes(12).toString('hex')}.part`)
    let handle: fsp.FileHandle | undefined
    try {
      await fsp.mkdir(path.dirname(final), { recursive: true })
      handle = await fsp.open(tmp, 'wx')
      if (Buffer.isBuffer(body)) await handle.writeFile(body)
      else for await (const chunk of body as AsyncIterable<Buffer>) await handle.write(chunk)
      const { size } = await handle.stat()
      if (meta.length !== undefined && size !== meta.length) throw new Error(`blob ${key}: ${size} bytes written, ${meta.length} announced`)
      await handle.sync()
      await handle.close()
      handle = undefined
      await fsp.rename(tmp, final)
      await syncFolder(path.dirname(final))
    } catch (err) {
      await handle?.close().catch(() => {})
      await fsp.rm(tmp, { force: true })
      throw unavailable(err)
    }
  }

  async get (key: string, range?: ByteRange): Promise<Readable | null> {
    const p = this.pathOf(key)
    let handle: fsp.FileHandle
    try {
      handle = await fsp.open(p, 'r')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw unavailable(err)
    }
    return handle.createReadStream(range === undefined ? {} : { start: range.start, end: range.end })
  }

  async read (key: string, range?: ByteRange): Promise<Buffer | null> {
    const p = this.pathOf(key)
    try {
      return range === undefined ? await fsp.readFile(p) : await readRange(p, range.start, range.end - range.start + 1)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw unavailable(err)
    }
  }

  async stat (key: string): Promise<{ readonly bytes: number } | null> {
    try {
      return { bytes: (await fsp.stat(this.pathOf(key))).size }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw unavailable(err)
    }
  }

  async delete (key: string): Promise<void> {
    await fsp.rm(this.pathOf(key), { force: true })
  }

  async * keys (): AsyncIterable<string> {
    const walk = async function * (dir: string, prefix: string): AsyncGenerator<string> {
      let entries: fs.Dirent[]
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true })
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
        throw err
      }
      for (const e of entries) {
        if (prefix === '' && e.name === TEMPORARY) continue
        const key = prefix === '' ? e.name : `${prefix}/${e.name}`
        if (e.isDirectory()) yield * walk(path.join(dir, e.name), key)
        else if (KEY.test(key)) yield key
      }
    }
    yield * walk(this.dir, '')
  }

  async close (): Promise<void> {}
}

/**
 * Up to `length` bytes of `file` from `position`: open, read, close, through fs's callbacks (a
 * FileHandle costs more per call, and a stream more again, for a file read once).
 */
async function readRange (file: string, position: number, length: number): Promise<Buffer> {
  return await new Promise((resolve, reject) => {
    fs.open(file, 'r', (err, fd) => {
      if (err !== null) {
        reject(err)
        return
      }
      const buf = Buffer.allocUnsafe(length)
      const next = (filled: number): void => {
        fs.read(fd, buf, filled, length - filled, position + filled, (err, n) => {
          if (err === null && n > 0 && filled + n < length) {
            next(filled + n)
            return
          }
          fs.close(fd, () => {})
          if (err !== null) reject(err)
          else resolve(filled + n === length ? buf : buf.subarray(0, filled + n))
        })
      }
      next(0)
    })
  })
}

/** A rename is durable once its folder's entry is (POSIX); some file systems cannot sync a folder. */
async function syncFolder (dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r').catch(() => null)
  if (handle === null) return
  try {
    await handle.sync()
  } catch {
    // EINVAL/EISDIR on file systems that do not sync folders: the rename stands, only its durability is theirs.
  } finally {
    await handle.close()
  }
}
