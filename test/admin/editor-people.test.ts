import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { generate } from 'otplib'
import { cspViolations, editorMissing, type EditorWorld, seriousViolations, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

const PASSWORD = 'a long pass phrase for ada'

describe('people signing in to the editor, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  let recovery: string[]
  before(async () => {
    w = await startEditorWorld()
    const owner = (await w.t.request({ method: 'POST', url: '/setup', payload: { token: w.t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: 'a long pass phrase for olive' } })).json()
    const invite = (await w.t.request({ method: 'POST', url: '/invitations', headers: { authorization: `Bearer ${owner.access_token as string}` }, payload: { email: 'ada@example.com', role: 'author' } })).json()
    const ada = (await w.t.request({ method: 'POST', url: '/invitations/accept', payload: { token: invite.token, name: 'Ada', password: PASSWORD } })).json()
    const bearer = { authorization: `Bearer ${ada.access_token as string}` }
    const { secret } = (await w.t.request({ method: 'POST', url: '/users/me/two-factor', headers: bearer })).json()
    recovery = (await w.t.request({ method: 'POST', url: '/users/me/two-factor/confirm', headers: bearer, payload: { code: await generate({ secret }) } })).json().recovery_codes
  })

  it('signs in with email, password and a code; a reload keeps the session; Sign out ends it on the service', async () => {
    const { page, context, errors } = await w.open()
    await page.goto('/admin')
    await page.getByLabel('Email').fill('ada@example.com')
    assert.deepEqual(await seriousViolations(page, errors), [], 'axe on the sign-in screen')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    // Two-factor codes are on: the form asks for one (a recovery code does too).
    await page.getByLabel('Code').fill(recovery[0]!)
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    assert.equal(await page.evaluate('Object.keys(sessionStorage).length'), 0, 'no token in the tab\'s storage: the access token is in memory')
    const cookies = await context.cookies()
    const refresh = cookies.find(c => c.name === 'blog_refresh')
    assert.ok(refresh?.httpOnly, 'the refresh token is an HttpOnly cookie')

    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByLabel('Email').waitFor()
    const spent = await w.t.request({ method: 'POST', url: '/sessions/refresh', headers: { cookie: `blog_refresh=${(await context.cookies()).find(c => c.name === 'blog_refresh')?.value ?? refresh.value}` } })
    assert.equal(spent.statusCode, 401, 'the session ended on the service')
    await page.reload()
    await page.getByLabel('Email').waitFor()
    assert.deepEqual(await cspViolations(page), [], 'no Content-Security-Policy violation')
    assert.deepEqual(errors.filter(e => !/status of 401/.test(e)), [], 'no script errors')
    await context.close()
  })
})
