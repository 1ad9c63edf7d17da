import { type Role, ROLE_ACTIONS, type RoleAction, roleMay } from './roles.ts'

/** A person behind a principal: a user, signed in (a session) or through a key of theirs. */
export interface Person {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly role: Role
  /** The session the access token was made from; null for a key of theirs. */
  readonly sessionId: string | null
}

/** Who is asking. Anonymous callers have no principal at all (`null`). */
export interface Principal {
  /** JWT `sub`, the API key's name, or a person's slug: what owns what they write. */
  readonly subject: string
  readonly scopes: ReadonlySet<string>
  readonly kind: 'jwt' | 'api-key' | 'user'
  /** The person, when it is one (`kind` `user`, or an API key a person made). */
  readonly person?: Person
}

export type Viewer = Principal | null

/** Who caused a change (every event carries it): a person, an API key, a JWT's subject, or the service itself. */
export interface Actor {
  readonly kind: 'user' | 'key' | 'jwt' | 'system'
  /** The user's id for a person; null otherwise. */
  readonly id: string | null
  /** The user's slug, the key's name, the JWT's `sub`, or `system`. */
  readonly name: string
}

export const SYSTEM_ACTOR: Actor = Object.freeze({ kind: 'system', id: null, name: 'system' })

export function actorOf (viewer: Viewer): Actor {
  if (viewer === null) return SYSTEM_ACTOR
  if (viewer.person !== undefined) return { kind: 'user', id: viewer.person.id, name: viewer.person.slug }
  return { kind: viewer.kind === 'jwt' ? 'jwt' : 'key', id: null, name: viewer.subject }
}

/** `admin` alone permits everything. */
export function isAdmin (viewer: Viewer): boolean {
  return viewer !== null && viewer.scopes.has('admin')
}

export function hasScope (viewer: Viewer, scope: string): boolean {
  return viewer !== null && (viewer.scopes.has(scope) || viewer.scopes.has('admin'))
}

/**
 * Whether the viewer may take a role's action: a person by their role; a credential that is no
 * person (a command-line key, a JWT of `AUTH_JWT_*`) by its scopes as before people existed —
 * `admin` may do everything, any other may do what its scopes let it on what it owns.
 */
export function may (viewer: Viewer, action: RoleAction): boolean {
  if (viewer === null) return false
  if (viewer.person !== undefined) return roleMay(viewer.person.role, action)
  if (isAdmin(viewer)) return true
  return ROLE_ACTIONS[action].ownWork
}

/** The ownership rule every resource shares: its owner, an admin, or one whose role may take `anyAction` on what others own. */
export function mayChange (viewer: Viewer, owner: string, anyAction?: RoleAction): boolean {
  return viewer !== null && (viewer.subject === owner || isAdmin(viewer) || (anyAction !== undefined && may(viewer, anyAction)))
}
