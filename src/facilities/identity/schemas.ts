import { type Static, type TProperties, type TSchema, Type } from '@sinclair/typebox'
import { ROLES, type Role } from '../../domain/roles.ts'
import { SLUG_MAX, SLUG_PATTERN } from '../../domain/slug.ts'
import { LinkSchema, TimestampSchema } from '../../http/contract/schemas.ts'
import { type CollectionSpec, pagingQueryProperties } from '../../http/toolkit/paging.ts'
import { API_VERSIONS, idNameOf } from '../../http/protocol/versioning.ts'

const roleSchema = Type.Unsafe<Role>({ type: 'string', enum: [...ROLES] })
const statusSchema = Type.Unsafe<'active' | 'suspended' | 'inactive'>({ type: 'string', enum: ['active', 'suspended', 'inactive'] })
const email = Type.String({ format: 'email', minLength: 3, maxLength: 320 })
/** A password as sent: its rules (12–256 characters) are checked apart, each with its own problem. */
const password = Type.String({ minLength: 1, maxLength: 4096 })
const name = Type.String({ minLength: 1, maxLength: 100 })
const secretToken = Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_-]+$' })
const refreshMode = Type.Optional(Type.Literal('cookie', { description: '`cookie`: the refresh token is set in the `blog_refresh` cookie (HttpOnly, SameSite=Strict, Path=/sessions) instead of in the body.' }))
const webauthnJson = Type.Object({}, { additionalProperties: true, description: 'As @simplewebauthn/browser gives it.' })
const userId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' })

export const UserIdParamsSchema = Type.Object({ user_id: userId }, { additionalProperties: false })
export type UserIdParams = Static<typeof UserIdParamsSchema>
export const SlugParamsSchema = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })
export const IdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 1500 }) }, { additionalProperties: false })
export const NameParamsSchema = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false })

export const SignInBodySchema = Type.Object({ email, password, code: Type.Optional(Type.String({ maxLength: 64 })), refresh: refreshMode }, { $id: 'SignInBody', additionalProperties: false })
export type SignInBody = Static<typeof SignInBodySchema>
export const PasskeySignInBodySchema = Type.Object({ response: webauthnJson, refresh: refreshMode }, { $id: 'PasskeySignInBody', additionalProperties: false })
export const RefreshBodySchema = Type.Object({ refresh_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), refresh: refreshMode }, { $id: 'RefreshBody', additionalProperties: false })
export type RefreshBody = Static<typeof RefreshBodySchema>
export const SetupBodySchema = Type.Object({ token: secretToken, name, email, password, refresh: refreshMode }, { $id: 'SetupBody', additionalProperties: false })
export type SetupBody = Static<typeof SetupBodySchema>
export const InviteBodySchema = Type.Object({ email, role: roleSchema, name: Type.Optional(name) }, { $id: 'InviteBody', additionalProperties: false })
export type InviteBody = Static<typeof InviteBodySchema>
export const AcceptInvitationBodySchema = Type.Object({ token: secretToken, name, password, refresh: refreshMode }, { $id: 'AcceptInvitationBody', additionalProperties: false })
export type AcceptInvitationBody = Static<typeof AcceptInvitationBodySchema>
export const PasswordResetBodySchema = Type.Object({ token: secretToken, password }, { $id: 'PasswordResetBody', additionalProperties: false })
export const ChangePasswordBodySchema = Type.Object({ current_password: password, password }, { $id: 'ChangePasswordBody', additionalProperties: false })
export const CodeBodySchema = Type.Object({ code: Type.String({ minLength: 1, maxLength: 64 }) }, { $id: 'CodeBody', additionalProperties: false })
export const PasskeyBodySchema = Type.Object({ name: Type.Optional(name), response: webauthnJson }, { $id: 'PasskeyBody', additionalProperties: false })
export const CreateKeyBodySchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' }),
  scopes: Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { minItems: 1, maxItems: 20, uniqueItems: true }),
}, { $id: 'CreatePersonalKeyBody', additionalProperties: false })

export const PatchUserBodySchema = Type.Object({
  name: Type.Optional(name),
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: SLUG_MAX, pattern: SLUG_PATTERN })),
  bio: Type.Optional(Type.String({ maxLength: 2000 })),
  website: Type.Optional(Type.Union([Type.String({ maxLength: 2000, pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$' }), Type.Null()])),
  avatar: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], { description: 'A media id (an image), or null.' })),
  email: Type.Optional(email),
  role: Type.Optional(roleSchema),
  status: Type.Optional(Type.Unsafe<'active' | 'suspended'>({ type: 'string', enum: ['active', 'suspended'] })),
}, { $id: 'PatchUserBody', additionalProperties: false, minProperties: 0 })
export type PatchUserBody = Static<typeof PatchUserBodySchema>

export const ListUsersQuerySchema = Type.Object({
  ...Type.Partial(Type.Object(pagingQueryProperties)).properties,
  role: Type.Optional(roleSchema),
  status: Type.Optional(statusSchema),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
}, { additionalProperties: false })
export const DeleteUserQuerySchema = Type.Object({ reassign_to: Type.Optional(userId) }, { additionalProperties: false })
export const USERS: CollectionSpec<'name'> = { name: 'users', sortKeys: ['name'], defaultSort: 'name', includes: [] }

const userProps = (version: number): TProperties => ({
  [idNameOf(version as 1, 'user')]: userId,
  email: Type.Optional(Type.Union([email, Type.Null()], { description: 'Only to the user and admins.' })),
  name,
  slug: Type.String({ maxLength: SLUG_MAX }),
  bio: Type.String({ maxLength: 2000 }),
  website: Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]),
  avatar: Type.Union([Type.String({ maxLength: 100 }), Type.Null()]),
  role: roleSchema,
  status: statusSchema,
  two_factor: Type.Boolean(),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
  last_seen_at: Type.Union([TimestampSchema, Type.Null()]),
  _links: Type.Object({ self: Type.Ref(LinkSchema), author: Type.Optional(Type.Ref(LinkSchema)) }, { additionalProperties: false }),
})

export const SessionSchema = Type.Object({
  id: Type.String({ maxLength: 64 }),
  created_at: TimestampSchema,
  last_used_at: TimestampSchema,
  user_agent: Type.String({ maxLength: 300 }),
  method: Type.Unsafe<string>({ type: 'string', enum: ['password', 'passkey', 'invitation', 'setup'] }),
  current: Type.Boolean(),
}, { $id: 'Session', additionalProperties: false })

export const InvitationSchema = Type.Object({
  id: Type.String({ maxLength: 64 }),
  email,
  role: roleSchema,
  name: Type.Union([name, Type.Null()]),
  token: Type.Optional(Type.String({ maxLength: 200, description: 'Shown only when the invitation is made.' })),
  url: Type.Optional(Type.String({ maxLength: 2400, description: '`/admin/invite#<token>`: the link to pass on. Shown only when the invitation is made.' })),
  created_at: TimestampSchema,
  expires_at: TimestampSchema,
}, { $id: 'Invitation', additionalProperties: false })

export const ResetSchema = Type.Object({ token: Type.String({ maxLength: 200 }), url: Type.String({ maxLength: 2400 }), expires_at: TimestampSchema }, { $id: 'PasswordReset', additionalProperties: false })
export const PasskeySchema = Type.Object({ id: Type.String({ maxLength: 1500 }), name, created_at: TimestampSchema, last_used_at: Type.Union([TimestampSchema, Type.Null()]) }, { $id: 'Passkey', additionalProperties: false })
export const TwoFactorSecretSchema = Type.Object({ secret: Type.String({ maxLength: 200 }), otpauth_url: Type.String({ maxLength: 2000 }) }, { $id: 'TwoFactorSecret', additionalProperties: false })
export const RecoveryCodesSchema = Type.Object({ recovery_codes: Type.Array(Type.String({ maxLength: 50 }), { minItems: 10, maxItems: 10 }) }, { $id: 'RecoveryCodes', additionalProperties: false })
export const PersonalKeySchema = Type.Object({
  name: Type.String({ maxLength: 100 }),
  scopes: Type.Array(Type.String({ maxLength: 50 }), { maxItems: 20 }),
  created_at: TimestampSchema,
  key: Type.Optional(Type.String({ maxLength: 200, description: 'The key, shown only when it is made.' })),
}, { $id: 'PersonalKey', additionalProperties: false })
export const JwksSchema = Type.Object({ keys: Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 100 }) }, { $id: 'Jwks', additionalProperties: false })

const imageSchema = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: 'The avatar as a post\'s `feature_image` is shown, or null.' })
export const AuthorSchema = Type.Object({
  slug: Type.String({ maxLength: SLUG_MAX }),
  name,
  bio: Type.String({ maxLength: 2000 }),
  website: Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]),
  avatar: imageSchema,
  post_count: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  _links: Type.Object({ self: Type.Ref(LinkSchema), posts: Type.Ref(LinkSchema) }, { additionalProperties: false }),
}, { $id: 'Author', additionalProperties: false })
export const ListAuthorsQuerySchema = Type.Object(Type.Partial(Type.Object(pagingQueryProperties)).properties, { additionalProperties: false })
export const AUTHORS: CollectionSpec<'name'> = { name: 'authors', sortKeys: ['name'], defaultSort: 'name', includes: [] }

export const userRef = (version: number): string => `UserV${version}`
export const sessionStartRef = (version: number): string => `SessionStartV${version}`

/** The schemas of people's routes, each representation of a user in every version (its id named per version). */
export function identitySchemas (): TSchema[] {
  const perVersion = API_VERSIONS.flatMap((v): TSchema[] => {
    const user: TSchema = Type.Object(userProps(v), { $id: userRef(v), additionalProperties: false })
    const start: TSchema = Type.Object({
      access_token: Type.String({ maxLength: 4096 }),
      token_type: Type.Literal('Bearer'),
      expires_in: Type.Integer({ minimum: 1, maximum: 86_400 }),
      refresh_token: Type.Optional(Type.String({ maxLength: 200, description: 'Absent when it went into the `blog_refresh` cookie.' })),
      session: Type.Ref(SessionSchema),
      user: Type.Ref(userRef(v)),
    }, { $id: sessionStartRef(v), additionalProperties: false })
    return [user, start]
  })
  return [
    SignInBodySchema, PasskeySignInBodySchema, RefreshBodySchema, SetupBodySchema, InviteBodySchema, AcceptInvitationBodySchema,
    PasswordResetBodySchema, ChangePasswordBodySchema, CodeBodySchema, PasskeyBodySchema, CreateKeyBodySchema, PatchUserBodySchema,
    SessionSchema, InvitationSchema, ResetSchema, PasskeySchema, TwoFactorSecretSchema, RecoveryCodesSchema, PersonalKeySchema, JwksSchema, AuthorSchema,
    ...perVersion,
  ]
}
