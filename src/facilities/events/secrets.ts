import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { type Config, ConfigError } from '../../config.ts'

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function newSecret (): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * Seals subscriptions' signing secrets for the database with AES-256-GCM, under a key derived
 * (HKDF-SHA256) from a master key that lives outside the database (WEBHOOK_SECRET, or the key the
 * service made under DATA_DIR): a copy of the database alone yields no usable secret
 * (docs/security.md). Seals under the first master; opens with whichever of them sealed.
 */
export class SecretBox {
  private readonly keys: readonly Buffer[]

  constructor (masters: string | readonly [string, ...string[]]) {
    const all = typeof masters === 'string' ? [masters] : masters
    this.keys = all.map(m => Buffer.from(hkdfSync('sha256', m, 'blog-post-service', 'webhook subscription secrets', 32)))
  }

  seal (secret: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.keys[0]!, iv)
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`
  }

  open (sealed: string): string {
    const raw = Buffer.from(sealed.slice('v1.'.length), 'base64')
    let failure: unknown
    // GCM's tag tells a wrong key for certain, so trying each master in turn is safe.
    for (const key of this.keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
        decipher.setAuthTag(raw.subarray(12, 28))
        return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
      } catch (err) {
        failure = err
      }
    }
    throw failure
  }
}

/** The file under DATA_DIR that holds the sealing key the service made (the form of WEBHOOK_SECRET). */
export const SEALING_KEY_FILE = 'webhook-sealing.key'

/** How the service came by its sealing key, for the start-up log. */
export type SealingKeySource =
  | { readonly kind: 'setting' }
  | { readonly kind: 'made', readonly file: string, readonly now: boolean }
  /** PostgreSQL without WEBHOOK_SECRET: instances would each make their own, so none is made. */
  | { readonly kind: 'missing' }

export interface Sealing {
  /** Null when the key must come from the operator and has not (`source.kind` is `missing`). */
  readonly box: SecretBox | null
  readonly source: SealingKeySource
}

const KEY_FORM = /^whsec_([A-Za-z0-9+/]+={0,2})$/

function readKey (file: string): string {
  const key = fs.readFileSync(file, 'utf8').trim()
  const m = KEY_FORM.exec(key)
  if (!m || Buffer.from(m[1]!, 'base64').length < 16) {
    const form = 'whsec_ and at least 16 bytes in base64'
    throw new ConfigError('DATA_DIR', `${file} does not hold a sealing key (${form}); restore it from a backup, or set WEBHOOK_SECRET`)
  }
  return key
}

/** Writes `bytes` to `file`, flushed, with the directory entry flushed too. */
function writeDurably (file: string, bytes: string, flag: 'wx'): void {
  const fd = fs.openSync(file, flag, 0o600)
  try {
    fs.writeSync(fd, bytes)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

function syncDir (dir: string): void {
  const fd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * The key in `dir`, made now when there is none. Made under a temporary name and linked to its
 * final one, which fails when another process (a second instance on the same SQLite file) linked
 * first: both then use the one that won, and no reader ever sees a half-written key.
 */
function madeKey (dir: string): { key: string, file: string, now: boolean } {
  const file = path.join(dir, SEALING_KEY_FILE)
  try {
    return { key: readKey(file), file, now: false }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`
  let now = true
  try {
    writeDurably(temporary, `${newSecret()}\n`, 'wx')
    try {
      fs.linkSync(temporary, file)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      now = false
    }
  } finally {
    fs.rmSync(temporary, { force: true })
  }
  syncDir(dir)
  return { key: readKey(file), file, now }
}

/**
 * The box that seals subscriptions' secrets, resolved once, by the facility's services (the routes
 * of each version and the sender share it, as `services.webhookSealing`):
 * - WEBHOOK_SECRET, when the operator set it, always wins; a key made earlier under DATA_DIR is
 *   still used to open what it sealed, so setting WEBHOOK_SECRET later loses no subscription.
 * - Else, on SQLite (one machine, one DATA_DIR), the key made at first start under DATA_DIR
 *   (mode 0600, never printed or logged) and read again at every later start.
 * - Else (PostgreSQL: several instances, which must share one key) none: `box` is null.
 */
export function sealingOf (config: Config): Sealing {
  let sealing: Sealing
  const file = path.join(config.dataDir, SEALING_KEY_FILE)
  if (config.eventLog.webhookSecret !== null) {
    const earlier = config.storeKind === 'sqlite' && fs.existsSync(file) ? [readKey(file)] : []
    sealing = { box: new SecretBox([config.eventLog.webhookSecret, ...earlier]), source: { kind: 'setting' } }
  } else if (config.storeKind === 'sqlite') {
    const made = madeKey(config.dataDir)
    sealing = { box: new SecretBox(made.key), source: { kind: 'made', file: made.file, now: made.now } }
  } else {
    sealing = { box: null, source: { kind: 'missing' } }
  }
  return sealing
}
