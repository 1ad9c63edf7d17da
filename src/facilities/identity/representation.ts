import type { FastifyRequest } from 'fastify'
import { isAdmin, type Principal } from '../../domain/principal.ts'
import { AppError } from '../../errors.ts'
import { idNameOf, linkBase } from '../../http/protocol/versioning.ts'
import type { Client } from './identity-service.ts'
import type { UserRecord } from './store.ts'

/** A user's fields (no email, no links): what a list shows of each. */
export function userData (u: UserRecord, version: number): Record<string, unknown> {
  return {
    [idNameOf(version as 1, 'user')]: u.id,
    name: u.name,
    slug: u.slug,
    bio: u.bio,
    website: u.website,
    avatar: u.avatar,
    role: u.role,
    status: u.status,
    two_factor: u.totpSecret !== null,
    created_at: u.createdAt,
    updated_at: u.updatedAt,
    last_seen_at: u.lastSeenAt,
  }
}
export const USER_FIELDS = (version: number): string[] => Object.keys(userData({ totpSecret: null } as UserRecord, version))

/** A user as the API shows them: the email only to themselves and admins. */
export function renderUser (req: FastifyRequest, u: UserRecord, showEmail: boolean, version = 1): Record<string, unknown> {
  const base = linkBase(req)
  const { [idNameOf(version as 1, 'user')]: id, ...rest } = userData(u, version)
  return {
    [idNameOf(version as 1, 'user')]: id,
    ...(showEmail ? { email: u.email } : {}),
    ...rest,
    _links: { self: { href: `${base}/users/${u.id}` }, author: { href: `${base}/authors/${u.slug}` } },
  }
}

export function seesEmail (viewer: Principal | null, u: UserRecord): boolean {
  return isAdmin(viewer) || viewer?.person?.id === u.id
}

export function clientOf (req: FastifyRequest): Client {
  const ua = req.headers['user-agent']
  return { address: req.ip, userAgent: typeof ua === 'string' ? ua : '' }
}

/** The signed-in person a route needs (a person's token or key); anyone else → 403 ROLE_FORBIDS. */
export function signedIn (req: FastifyRequest): NonNullable<Principal['person']> {
  const person = req.principal?.person
  if (person === undefined) throw new AppError('ROLE_FORBIDS', 'This is about a signed-in person: use a person\'s access token, not an API key of the command line or an identity provider\'s JWT.')
  return person
}
