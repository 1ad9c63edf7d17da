import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SignJWT } from 'jose'
import { loadConfig } from '../../../src/context.ts'
import { Authenticator } from '../../../src/http/pipeline/auth.ts'
import type { ApiKeyStore } from '../../../src/store/store.ts'
import { JWT_SECRET } from '../../helper.ts'

const noKeys = {} as ApiKeyStore
const key = new TextEncoder().encode(JWT_SECRET)

describe('Authenticator: verified JWTs', () => {
  const auth = new Authenticator(loadConfig({ AUTH_JWT_SECRET: JWT_SECRET }).auth, noKeys)

  it('verifies a token once and answers its next uses from memory, with the same principal', async () => {
    const token = await new SignJWT({ scope: 'posts:write' }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime('1h').sign(key)
    const first = await auth.authenticate(`Bearer ${token}`)
    const second = await auth.authenticate(`Bearer ${token}`)
    assert.equal(first.subject, 'alice')
    assert.equal(second, first)
  })

  it('remembers no refusal: a bad signature is refused every time', async () => {
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('mallory').setExpirationTime('1h').sign(key)
    const forged = token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA')
    for (let i = 0; i < 2; i++) await assert.rejects(auth.authenticate(`Bearer ${forged}`), { code: 'INVALID_TOKEN' })
  })

  it('does not keep a token past its exp', async () => {
    const exp = Math.floor(Date.now() / 1000) - 40
    const expired = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime(exp).sign(key)
    await assert.rejects(auth.authenticate(`Bearer ${expired}`), { code: 'INVALID_TOKEN' })
  })
})
