import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function newSecret (): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * Seals subscriptions' signing secrets for the database with AES-256-GCM, under a key derived
 * (HKDF-SHA256) from WEBHOOK_SECRET, which lives in the service's settings and never in the
 * database: a copy of the database alone yields no usable secret (docs/security.md).
 */
export class SecretBox {
  private readonly key: Buffer

  constructor (master: string) {
    this.key = Buffer.from(hkdfSync('sha256', master, 'blog-post-service', 'webhook subscription secrets', 32))
  }

  seal (secret: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`
  }

  open (sealed: string): string {
    const raw = Buffer.from(sealed.slice('v1.'.length), 'base64')
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(12, 28))
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
  }
}
