import { Type } from '@sinclair/typebox'
import { parse as parseCookies, serialize as serializeCookie } from 'cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { may, type Principal } from '../../domain/principal.ts'
import { AppError } from '../../errors.ts'
import type { PartContext, Resource, RouteContext } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, NoContentSchema, problemResponses, SYSTEM_ERRORS } from '../../http/contract/schemas.ts'
import { linkBase } from '../../http/protocol/versioning.ts'
import type { IdentityService, SessionStart } from './identity-service.ts'
import * as S from './schemas.ts'
import type { InvitationRecord, SessionRecord } from './store.ts'
import { clientOf, renderUser, signedIn } from './representation.ts'

export const REFRESH_COOKIE = 'blog_refresh'
const tags = ['sessions']
const NO_STORE = 'no-store'

export function renderSession (s: SessionRecord, current: string | null): Record<string, unknown> {
  return { id: s.id, created_at: s.createdAt, last_used_at: s.lastUsedAt, user_agent: s.userAgent, method: s.method, current: s.id === current }
}

export function renderInvitation (i: InvitationRecord, token?: string): Record<string, unknown> {
  return {
    id: i.id,
    email: i.email,
    role: i.role,
    name: i.name,
    ...(token !== undefined ? { token, url: `/admin/invite#${token}` } : {}),
    created_at: i.createdAt,
    expires_at: i.expiresAt,
  }
}

/** A session's start as the client gets it: the refresh token in the body, or (asked for) in the cookie alone. */
function sendStart (req: FastifyRequest, reply: FastifyReply, ctx: PartContext, start: SessionStart, status: 200 | 201, mode: 'cookie' | undefined): FastifyReply {
  const body: Record<string, unknown> = {
    access_token: start.accessToken,
    token_type: 'Bearer',
    expires_in: start.expiresIn,
    ...(mode === 'cookie' ? {} : { refresh_token: start.refreshToken }),
    session: renderSession(start.session, start.session.id),
    user: renderUser(req, start.user, true),
  }
  if (mode === 'cookie') reply.header('set-cookie', refreshCookie(ctx, start.refreshToken, ctx.config.identity.sessionDays * 86_400))
  return reply.code(status).header('cache-control', NO_STORE).send(body)
}

function refreshCookie (ctx: PartContext, value: string, maxAge: number): string {
  return serializeCookie(REFRESH_COOKIE, value, { httpOnly: true, sameSite: 'strict', path: '/sessions', secure: ctx.config.publicBaseUrl.startsWith('https:'), maxAge })
}

function cookieToken (req: FastifyRequest): string | undefined {
  const header = req.headers.cookie
  if (typeof header !== 'string') return undefined
  const value = parseCookies(header)[REFRESH_COOKIE]
  return value === undefined || value === '' ? undefined : value
}

const START_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422)

/** Sign-in, set-up, sessions, invitations and resets: how people get and end their tokens. */
async function sessionRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const identity = (): IdentityService => ctx.services.identity
  const startRef = Type.Ref(S.sessionStartRef(ctx.version))
  const anyone = { ignoresCredentials: true } as const

  app.post<{ Body: S.SignInBody }>('/sessions', ctx.route({
    config: anyone,
    schema: { tags, summary: 'Sign in with email and password', description: 'With two-factor codes on, `code` (a TOTP or a recovery code) is needed: without it 401 `CODE_REQUIRED`. A wrong email, password or code, or an account that cannot sign in: 401 `INVALID_CREDENTIALS`, in about the same time. Throttled per email and per client address: 429 `SIGN_IN_THROTTLED`.', body: Type.Ref(S.SignInBodySchema), response: { 201: startRef, ...START_ERRORS } },
  }), async (req, reply) => sendStart(req, reply, ctx, await identity().signIn(req.body, clientOf(req)), 201, req.body.refresh))

  app.post('/sessions/passkey/options', ctx.route({
    config: { ...anyone, optionalBody: true },
    schema: { tags, summary: 'Start a passkey sign-in', description: 'WebAuthn `PublicKeyCredentialRequestOptionsJSON`, without `allowCredentials` (a discoverable passkey chooses the account); its challenge may be answered once, within 5 minutes.', response: { 200: Type.Object({}, { additionalProperties: true }), ...START_ERRORS } },
  }), async (_req, reply) => reply.header('cache-control', NO_STORE).send(await identity().passkeys.authenticationOptions()))

  app.post<{ Body: { response: never, refresh?: 'cookie' } }>('/sessions/passkey', ctx.route({
    config: anyone,
    schema: { tags, summary: 'Sign in with a passkey', description: 'A challenge answered twice, late or for another origin, or a signature counter that went back: 401 `PASSKEY_REJECTED`. No two-factor code is asked for.', body: Type.Ref(S.PasskeySignInBodySchema), response: { 201: startRef, ...START_ERRORS } },
  }), async (req, reply) => sendStart(req, reply, ctx, await identity().passkeySignIn(req.body.response, clientOf(req)), 201, req.body.refresh))

  app.post<{ Body: S.RefreshBody | undefined }>('/sessions/refresh', ctx.route({
    config: { ...anyone, optionalBody: true },
    schema: { tags, summary: 'Refresh: a new access token and a new refresh token', description: 'Body `{refresh_token}`, or none with the `blog_refresh` cookie. The refresh token is spent: presented again, it ends the whole session (401 `SESSION_REVOKED`) and emits `session.reuse_detected`.', body: Type.Ref(S.RefreshBodySchema), response: { 200: startRef, ...START_ERRORS } },
  }), async (req, reply) => {
    const fromBody = req.body?.refresh_token
    const token = fromBody ?? cookieToken(req)
    if (token === undefined) throw new AppError('SESSION_REVOKED', 'No refresh token: send `refresh_token`, or the `blog_refresh` cookie.')
    // A token that came in the cookie goes back in the cookie.
    return sendStart(req, reply, ctx, await identity().refresh(token), 200, fromBody === undefined ? 'cookie' : req.body?.refresh)
  })

  app.get('/sessions', ctx.route({
    config: { requiresCredential: true },
    schema: { tags, summary: 'Your live sessions', response: { 200: Type.Array(Type.Ref(S.SessionSchema)), ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => {
    const person = signedIn(req)
    const sessions = await identity().sessions(person)
    return reply.header('cache-control', 'private, no-store').send(sessions.map(s => renderSession(s, person.sessionId)))
  })

  app.delete<{ Params: { session_id: string } }>('/sessions/:session_id', ctx.route({
    config: { ignoresCredentials: false },
    schema: {
      tags,
      summary: 'End a session (sign out)',
      description: '`current`: the session of the access token sent (or, with no token, of the `blog_refresh` cookie). Its refresh token and every access token made from it stop working on every instance within a second.',
      params: Type.Object({ session_id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }) }, { additionalProperties: false }),
      // A person's access token, or (for `current` alone) the refresh cookie.
      security: [{ bearer: [] }],
      response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) },
    },
  }), async (req, reply) => {
    const cookie = cookieToken(req)
    if (req.principal === null && req.params.session_id === 'current' && cookie !== undefined) {
      await identity().endByRefreshToken(cookie)
    } else {
      if (req.principal === null) throw new AppError('UNAUTHENTICATED')
      await identity().endSession(signedIn(req), req.params.session_id, req.principal)
    }
    if (cookie !== undefined && req.params.session_id === 'current') reply.header('set-cookie', refreshCookie(ctx, '', 0))
    return reply.code(204).header('cache-control', NO_STORE).send()
  })

  app.post<{ Body: S.SetupBody }>('/setup', ctx.route({
    config: anyone,
    schema: { tags, summary: 'Set up the blog: its owner', description: 'With the token of the set-up link the service prints at start while the blog has no owner. Later: 409 `ALREADY_SET_UP`.', body: Type.Ref(S.SetupBodySchema), response: { 201: startRef, ...START_ERRORS } },
  }), async (req, reply) => sendStart(req, reply, ctx, await identity().setup(req.body, clientOf(req)), 201, req.body.refresh))

  app.post<{ Body: S.InviteBody }>('/invitations', ctx.route({
    config: { requiresCredential: true },
    schema: { tags: ['invitations'], summary: 'Invite someone', description: '`admin`: any role but owner; `editor`: contributors and authors. The answer\'s `url` (`/admin/invite#<token>`, valid 7 days) is passed on by the inviter: the service sends no mail. An email that is an active user\'s: 409 `EMAIL_TAKEN`.', body: Type.Ref(S.InviteBodySchema), response: { 201: Type.Ref(S.InvitationSchema), ...START_ERRORS } },
  }), async (req, reply) => {
    const { invitation, token } = await identity().invite(req.principal!, req.body)
    return reply.code(201).header('cache-control', NO_STORE).header('location', `${linkBase(req)}/invitations/${invitation.id}`).send(renderInvitation(invitation, token))
  })

  app.get('/invitations', ctx.route({
    config: { requiresCredential: true },
    schema: { tags: ['invitations'], summary: 'Open invitations', description: 'Editors and above.', response: { 200: Type.Array(Type.Ref(S.InvitationSchema)), ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => {
    mayManageInvitations(req.principal!)
    return reply.header('cache-control', 'private, no-store').send((await identity().invitations()).map(i => renderInvitation(i)))
  })

  app.delete<{ Params: { id: string } }>('/invitations/:id', ctx.route({
    config: { requiresCredential: true },
    schema: { tags: ['invitations'], summary: 'Revoke an invitation', params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }), response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => {
    mayManageInvitations(req.principal!)
    await identity().revokeInvitation(req.params.id, req.principal!)
    return reply.code(204).header('cache-control', NO_STORE).send()
  })

  app.post<{ Body: S.AcceptInvitationBody }>('/invitations/accept', ctx.route({
    config: anyone,
    schema: { tags: ['invitations'], summary: 'Accept an invitation', description: 'Makes the user, active with the invited role, and signs them in (method `invitation`). An unknown, used, revoked or expired token: 404 `INVITATION_NOT_FOUND`.', body: Type.Ref(S.AcceptInvitationBodySchema), response: { 201: startRef, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => sendStart(req, reply, ctx, await identity().acceptInvitation(req.body, clientOf(req)), 201, req.body.refresh))

  app.post<{ Body: { token: string, password: string } }>('/password-resets', ctx.route({
    config: anyone,
    schema: { tags, summary: 'Set a password with a reset link', description: 'Every session of that user ends. An unknown, used or expired token: 404 `RESET_NOT_FOUND`.', body: Type.Ref(S.PasswordResetBodySchema), response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => {
    await identity().useReset(req.body)
    return reply.code(204).header('cache-control', NO_STORE).send()
  })
}

function mayManageInvitations (p: Principal): void {
  if (!may(p, 'invitations.writers')) throw new AppError('ROLE_FORBIDS', 'Invitations are seen and revoked by editors and above.')
}

/** The JWKS: what a gateway checks the service's access tokens with. The same in every version. */
async function jwksRoute (app: FastifyInstance, ctx: PartContext): Promise<void> {
  app.get('/.well-known/jwks.json', {
    config: { ignoresCredentials: true },
    schema: { tags, summary: 'The public keys of the service\'s access tokens (JWKS)', description: 'ES256 keys. A rotation keeps the previous key listed until every token it signed has expired.', response: { 200: Type.Ref(S.JwksSchema), ...problemResponses(...SYSTEM_ERRORS) } },
  }, async (_req, reply) => reply.header('cache-control', 'public, max-age=300').send(ctx.services.identity.keys.jwks()))
}

export const sessionsResource: Resource = {
  name: 'sessions',
  description: 'Sign-in, sessions, set-up, invitations and password resets',
  path: '/sessions',
  indexed: false,
  schemas: [],
  routes: sessionRoutes,
  unversionedRoutes: jwksRoute,
  unversionedPaths: ['/.well-known/jwks.json'],
  eventTypes: ['session.reuse_detected'],
}
