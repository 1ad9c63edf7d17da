import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { generateApiKey } from '../../http/pipeline/auth.ts'
import { deriveSlug } from '../../domain/slug.ts'
import { actorOf, isAdmin } from '../../domain/principal.ts'
import { scopesOfRole } from '../../domain/roles.ts'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import type { Resource, RouteContext } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, NoContentSchema, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import { MERGE_PATCH } from '../../http/pipeline/content-type.ts'
import { listHandler } from '../../http/toolkit/collection.ts'
import { preconditionOf, sendResource } from '../../http/toolkit/conditional.ts'
import { answerDelete, answerWrite, writtenResource } from '../../http/toolkit/write.ts'
import type { ListQuery, UnitOfWork } from '../../store/store.ts'
import { freeUserSlug, type IdentityService, newUserId, roleForbids, userEvent, userNotFound } from './identity-service.ts'
import * as S from './schemas.ts'
import { clientOf, renderUser, seesEmail, signedIn, USER_FIELDS, userData } from './representation.ts'
import type { UserFilter, UserRecord } from './store.ts'

const tags = ['users']
const PRIVATE = 'private, no-store'
const READ_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422)
const WRITE_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422)

async function userRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { version, store } = ctx
  const identity = (): IdentityService => ctx.services.identity
  const userRef = Type.Ref(S.userRef(version))
  const render = (req: FastifyRequest, u: UserRecord) => renderUser(req, u, seesEmail(req.principal, u), version)
  const credential = { requiresCredential: true } as const
  const meOr = (req: FastifyRequest<{ Params: { user_id?: string } }>): string => req.params.user_id ?? signedIn(req).id
  const images = ctx.resources.find(r => r.images !== undefined)?.images
  const authorship = () => ctx.resources.find(r => r.authorship !== undefined)?.authorship

  /** The user, when the request's If-Match / If-Unmodified-Since holds for them (else 412). */
  const current = async (req: FastifyRequest, uow: UnitOfWork, id: string): Promise<UserRecord> => {
    const u = await uow.identity.userById(id)
    if (u === null) throw userNotFound(id)
    const holds = preconditionOf(req, 'users')
    if (holds !== undefined && !holds(u)) throw new AppError('PRECONDITION_FAILED')
    return u
  }

  app.get('/users', ctx.route({
    config: credential,
    schema: { tags, summary: 'List users', description: 'Any signed-in person, or `admin`. Filters `role`, `status`; `q` matches name and email. Emails are shown to admins only.', querystring: S.ListUsersQuerySchema, response: { 200: Type.Array(userRef), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), listHandler(ctx.cursors, {
    collection: S.USERS,
    fieldNames: USER_FIELDS(version),
    defaultFields: () => USER_FIELDS(version),
    data: (u: UserRecord) => userData(u, version),
    selfLink: true,
    audience: 'private',
    read: async (req, query: ListQuery<'name', UserFilter>) => {
      if (req.principal?.person === undefined && !isAdmin(req.principal)) throw roleForbids('Users are listed to signed-in people and admins.')
      return await store.identity.listUsers(query)
    },
  }))

  for (const path of ['/users/me', '/users/:user_id']) {
    app.get<{ Params: { user_id?: string } }>(path, ctx.route({
      config: credential,
      schema: { tags, summary: path === '/users/me' ? 'Yourself' : 'Read a user', ...(path === '/users/me' ? {} : { params: S.UserIdParamsSchema }), response: { 200: userRef, 304: NotModifiedSchema, ...READ_ERRORS } },
    }), async (req, reply) => {
      const u = await identity().user(meOr(req))
      return sendResource(req, reply, 'users', u, render(req, u), 'private')
    })

    app.patch<{ Params: { user_id?: string }, Body: S.PatchUserBody }>(path, ctx.route({
      config: { ...credential, bodyTypes: [MERGE_PATCH], acceptPatch: [MERGE_PATCH] },
      schema: {
        tags,
        summary: path === '/users/me' ? 'Change your profile' : 'Change a user',
        description: '`application/merge-patch+json`. The user: `name`, `slug` (a former one still leads to `/authors/{slug}`), `bio`, `website`, `avatar` (a media id or null), `email`; `admin`: also `role` and `status` (`active`, `suspended`: a suspended user\'s sessions and keys stop on every instance within a second). The owner cannot be suspended or demoted: 409 `OWNER_PROTECTED`.',
        ...(path === '/users/me' ? {} : { params: S.UserIdParamsSchema }),
        body: Type.Ref(S.PatchUserBodySchema),
        response: { 200: userRef, 204: NoContentSchema, ...WRITE_ERRORS },
      },
    }), async (req, reply) => {
      const id = meOr(req)
      const body = req.body
      if (body.avatar !== undefined && body.avatar !== null) {
        const found = images === undefined ? new Map() : await images.find(store, [body.avatar], ctx.config)
        if (!found.has(body.avatar)) throw validationFailed([fieldError('avatar', 'INVALID_VALUE', 'No image with this id exists.')])
      }
      return await answerWrite(ctx.store, req, reply, async uow => {
        const before = await current(req, uow, id)
        const after = await identity().editUser(uow, req.principal!, before, body)
        if (after === null) throw new AppError('PRECONDITION_FAILED', 'The user changed meanwhile; read them again.')
        if (after.slug !== before.slug) await authorship()?.renamed(uow, { id: after.id, slug: after.slug })
        return writtenResource(req, 'users', after, render(req, after), 200)
      })
    })
  }

  app.delete<{ Params: S.UserIdParams, Querystring: { reassign_to?: string } }>('/users/:user_id', ctx.route({
    config: { requiredScope: 'admin' },
    schema: { tags, summary: 'Delete a user', description: '`admin`. A user who authors posts needs `?reassign_to={user_id}` (their place in each post\'s `authors` goes to that user): else 409 `USER_HAS_POSTS`. The owner: 409 `OWNER_PROTECTED`.', params: S.UserIdParamsSchema, querystring: S.DeleteUserQuerySchema, response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => {
    return await answerDelete(ctx.store, req, reply, async uow => {
      const user = await current(req, uow, req.params.user_id)
      if (user.role === 'owner') throw new AppError('OWNER_PROTECTED', 'The owner cannot be deleted: the owner first hands the ownership over.')
      const to = req.query.reassign_to
      if (to !== undefined) {
        const heir = await uow.identity.userById(to)
        if (heir === null || heir.id === user.id) throw validationFailed([fieldError('reassign_to', 'INVALID_VALUE', 'Name another user, who exists.')])
        await authorship()?.reassign(uow, user, heir)
      } else if (await authorship()?.holds(uow, user.id) === true) {
        throw new AppError('USER_HAS_POSTS', 'This user is an author of posts: name who takes their place with ?reassign_to={user_id}.')
      }
      await identity().userDeleted(uow, user)
      await uow.identity.deleteUser(user.id)
    })
  })

  app.post<{ Params: S.UserIdParams }>('/users/:user_id/ownership', ctx.route({
    config: { ...credential, optionalBody: true },
    schema: { tags, summary: 'Hand the ownership over', description: 'The owner only: that user becomes `owner`, the old owner `admin`.', params: S.UserIdParamsSchema, response: { 200: userRef, ...WRITE_ERRORS } },
  }), async (req, reply) => {
    const me = signedIn(req)
    if (me.role !== 'owner') throw roleForbids('Only the owner hands the ownership over.')
    return await answerWrite(ctx.store, req, reply, async uow => {
      const heir = await current(req, uow, req.params.user_id)
      if (heir.id === me.id) return writtenResource(req, 'users', heir, render(req, heir), 200)
      if (heir.status !== 'active') throw validationFailed([fieldError('user_id', 'INVALID_VALUE', 'The ownership goes to an active user.')])
      const owner = await uow.identity.userById(me.id)
      if (owner === null || await identity().changeUser(uow, owner, { role: 'admin' }) === null) throw new AppError('PRECONDITION_FAILED', 'Your account changed meanwhile: try again.')
      const after = await identity().changeUser(uow, heir, { role: 'owner' })
      if (after === null) throw new AppError('PRECONDITION_FAILED', 'The user changed meanwhile; read them again.')
      return writtenResource(req, 'users', after, render(req, after), 200)
    })
  })

  app.post<{ Params: S.UserIdParams }>('/users/:user_id/password-reset', ctx.route({
    config: { requiredScope: 'admin', optionalBody: true },
    schema: { tags, summary: 'Make a password reset link', description: '`admin`. The link (`/admin/reset#<token>`, valid an hour, single use) is passed on by the admin: the service sends no mail. An inactive profile with an email becomes active when it is used.', params: S.UserIdParamsSchema, response: { 201: Type.Ref(S.ResetSchema), ...WRITE_ERRORS } },
  }), async (req, reply) => {
    const { token, expiresAt } = await identity().createReset(req.params.user_id, req.principal!)
    return reply.code(201).header('cache-control', PRIVATE).send({ token, url: `/admin/reset#${token}`, expires_at: expiresAt.toISOString() })
  })

  app.put<{ Body: { current_password: string, password: string } }>('/users/me/password', ctx.route({
    config: credential,
    schema: { tags, summary: 'Change your password', description: 'Every other session of yours ends. A wrong `current_password`: 403 `WRONG_PASSWORD` (a failure for the sign-in throttle).', body: Type.Ref(S.ChangePasswordBodySchema), response: { 204: NoContentSchema, ...WRITE_ERRORS } },
  }), async (req, reply) => {
    await identity().changePassword(signedIn(req), req.body, clientOf(req))
    return reply.code(204).header('cache-control', PRIVATE).send()
  })

  // Passkeys

  app.post('/users/me/passkeys/options', ctx.route({
    config: { ...credential, optionalBody: true },
    schema: { tags: ['passkeys'], summary: 'Start registering a passkey', description: 'WebAuthn `PublicKeyCredentialCreationOptionsJSON`, a resident key required; its challenge may be answered once, within 5 minutes.', response: { 200: Type.Object({}, { additionalProperties: true }), ...WRITE_ERRORS } },
  }), async (req, reply) => reply.header('cache-control', PRIVATE).send(await identity().passkeyOptions(signedIn(req))))

  app.post<{ Body: { name?: string, response: never } }>('/users/me/passkeys', ctx.route({
    config: credential,
    schema: { tags: ['passkeys'], summary: 'Register a passkey', body: Type.Ref(S.PasskeyBodySchema), response: { 201: Type.Ref(S.PasskeySchema), ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => {
    const p = await identity().addPasskey(signedIn(req), req.body)
    return reply.code(201).header('cache-control', PRIVATE).send({ id: p.id, name: p.name, created_at: p.createdAt, last_used_at: p.lastUsedAt })
  })

  app.get('/users/me/passkeys', ctx.route({
    config: credential,
    schema: { tags: ['passkeys'], summary: 'Your passkeys', response: { 200: Type.Array(Type.Ref(S.PasskeySchema)), ...READ_ERRORS } },
  }), async (req, reply) => {
    const keys = await store.identity.passkeysOf(signedIn(req).id)
    return reply.header('cache-control', PRIVATE).send(keys.map(p => ({ id: p.id, name: p.name, created_at: p.createdAt, last_used_at: p.lastUsedAt })))
  })

  app.delete<{ Params: { id: string } }>('/users/me/passkeys/:id', ctx.route({
    config: credential,
    schema: { tags: ['passkeys'], summary: 'Remove a passkey', params: S.IdParamsSchema, response: { 204: NoContentSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const person = signedIn(req)
    const done = await store.transaction(async uow => await uow.identity.deletePasskey(person.id, req.params.id), { actor: actorOf(req.principal) })
    if (!done) throw new AppError('PASSKEY_NOT_FOUND', 'You have no passkey with this id.')
    return reply.code(204).header('cache-control', PRIVATE).send()
  })

  // Two-factor codes

  app.post('/users/me/two-factor', ctx.route({
    config: { ...credential, optionalBody: true },
    schema: { tags: ['two-factor'], summary: 'Start turning on two-factor codes', description: 'The secret, as text and as an `otpauth://` URL (for a QR code). Codes are asked for once it is confirmed.', response: { 201: Type.Ref(S.TwoFactorSecretSchema), ...WRITE_ERRORS } },
  }), async (req, reply) => {
    const { secret, otpauthUrl } = await identity().beginTwoFactor(signedIn(req))
    return reply.code(201).header('cache-control', PRIVATE).send({ secret, otpauth_url: otpauthUrl })
  })

  app.post<{ Body: { code: string } }>('/users/me/two-factor/confirm', ctx.route({
    config: credential,
    schema: { tags: ['two-factor'], summary: 'Confirm two-factor codes with a first code', description: 'From now on a password sign-in needs `code`. The answer holds 10 single-use recovery codes, shown once.', body: Type.Ref(S.CodeBodySchema), response: { 200: Type.Ref(S.RecoveryCodesSchema), ...WRITE_ERRORS } },
  }), async (req, reply) => reply.header('cache-control', PRIVATE).send({ recovery_codes: await identity().confirmTwoFactor(signedIn(req), req.body.code) }))

  app.delete<{ Body: { code: string } }>('/users/me/two-factor', ctx.route({
    config: credential,
    schema: { tags: ['two-factor'], summary: 'Turn two-factor codes off', description: 'With a current code (or a recovery code).', body: Type.Ref(S.CodeBodySchema), response: { 204: NoContentSchema, ...WRITE_ERRORS } },
  }), async (req, reply) => {
    await identity().disableTwoFactor(signedIn(req), req.body.code)
    return reply.code(204).header('cache-control', PRIVATE).send()
  })

  // People's API keys

  app.post<{ Body: { name: string, scopes: string[] } }>('/users/me/keys', ctx.route({
    config: credential,
    schema: { tags: ['keys'], summary: 'Make an API key that acts as you', description: 'Shown once. Its scopes are capped by your role (a scope beyond it: 422 `SCOPE_NOT_ALLOWED`); it stops with your sessions when you are suspended.', body: Type.Ref(S.CreateKeyBodySchema), response: { 201: Type.Ref(S.PersonalKeySchema), ...WRITE_ERRORS } },
  }), async (req, reply) => {
    const person = signedIn(req)
    const allowed = new Set(scopesOfRole(person.role))
    const beyond = req.body.scopes.filter(s => !allowed.has(s) && !allowed.has('admin'))
    if (beyond.length > 0) throw new AppError('SCOPE_NOT_ALLOWED', `Your role (${person.role}) has no ${beyond.map(s => `"${s}"`).join(', ')} scope.`)
    const key = generateApiKey()
    const stored = `${person.id}:${req.body.name}`
    const record = await store.transaction(async uow => {
      if ((await uow.identity.keysOf(person.id)).some(k => k.name === stored)) throw new AppError('KEY_NAME_TAKEN', `You have a key named "${req.body.name}".`)
      const r = await uow.apiKeys.create({ id: key.id, name: stored, scopes: req.body.scopes, hash: key.hash }, ctx.clock.now())
      await uow.identity.setKeyOwner(r.id, person.id)
      return r
    }, { actor: actorOf(req.principal) })
    return reply.code(201).header('cache-control', PRIVATE).send({ name: req.body.name, scopes: record.scopes, created_at: record.createdAt, key: key.token })
  })

  app.get('/users/me/keys', ctx.route({
    config: credential,
    schema: { tags: ['keys'], summary: 'Your API keys', response: { 200: Type.Array(Type.Ref(S.PersonalKeySchema)), ...READ_ERRORS } },
  }), async (req, reply) => {
    const person = signedIn(req)
    const keys = await store.identity.keysOf(person.id)
    return reply.header('cache-control', PRIVATE).send(keys.map(k => ({ name: k.name.slice(person.id.length + 1), scopes: k.scopes, created_at: k.createdAt })))
  })

  app.delete<{ Params: { name: string } }>('/users/me/keys/:name', ctx.route({
    config: credential,
    schema: { tags: ['keys'], summary: 'Revoke one of your API keys', params: S.NameParamsSchema, response: { 204: NoContentSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const person = signedIn(req)
    const n = await store.transaction(async uow => await uow.identity.revokeKeysOf(person.id, `${person.id}:${req.params.name}`, ctx.clock.now()), { actor: actorOf(req.principal) })
    if (n === 0) throw new AppError('KEY_NOT_FOUND', `You have no key named "${req.params.name}".`)
    return reply.code(204).header('cache-control', PRIVATE).send()
  })
}

export const usersResource: Resource = {
  name: 'users',
  description: 'People: accounts, roles, profiles, passkeys, two-factor codes and their keys',
  path: '/users',
  schemas: S.identitySchemas(),
  routes: userRoutes,
  eventTypes: ['user.created', 'user.updated', 'user.suspended', 'user.deleted'],
  // The people a post may name as its authors: any user, by current slug.
  bylines: {
    find: async (store, slugs) => new Map((await store.identity.usersBySlugs(slugs)).map(u => [u.slug, { id: u.id, slug: u.slug, name: u.name }])),
    ensure: async (uow, name, now) => {
      const found = await uow.identity.userBySlug(deriveSlug(name))
      if (found !== null) return { id: found.id, slug: found.slug }
      const user = await uow.identity.insertUser({ id: newUserId(), email: null, name: name.slice(0, 100), slug: await freeUserSlug(uow, name), role: 'author', status: 'inactive', passwordHash: null }, now)
      uow.events.record(userEvent('user.created', user))
      return { id: user.id, slug: user.slug }
    },
  },
}
