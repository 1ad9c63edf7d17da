/**
 * People's roles, each with everything of the ones before it, and the one table of what each may
 * do: the rules of posts, media and people ask it, and the people guide's table is checked against it.
 */
export const ROLES = ['contributor', 'author', 'editor', 'admin', 'owner'] as const
export type Role = typeof ROLES[number]

/**
 * Each action a role may or may not take, the least role that may, whether a credential that is no
 * person (a command-line key, an identity provider's JWT) with a write scope may take it on its own
 * work (`ownWork`), and what it is (the docs' words).
 */
export const ROLE_ACTIONS = {
  'posts.draft': { least: 'contributor', ownWork: true, description: 'write drafts of their own posts, and change them while they are unpublished' },
  'posts.publish': { least: 'author', ownWork: true, description: 'publish and schedule their own posts, and change them once published' },
  'posts.any': { least: 'editor', ownWork: false, description: 'edit, publish and delete every post; set a post\'s authors' },
  'media.any': { least: 'editor', ownWork: false, description: 'change and delete every image and file' },
  'invitations.writers': { least: 'editor', ownWork: false, description: 'invite contributors and authors' },
  'users.manage': { least: 'admin', ownWork: false, description: 'manage users, keys, webhooks, imports, exports and settings (the `admin` scope); invite any role but owner' },
  'ownership.transfer': { least: 'owner', ownWork: false, description: 'hand the ownership to another user' },
} as const satisfies Record<string, { least: Role, ownWork: boolean, description: string }>
export type RoleAction = keyof typeof ROLE_ACTIONS

export function roleRank (role: Role): number {
  return ROLES.indexOf(role)
}

/** Whether `role` may take `action`. */
export function roleMay (role: Role, action: RoleAction): boolean {
  return roleRank(role) >= roleRank(ROLE_ACTIONS[action].least)
}

/** The scopes a person of `role` acts with (an API key of theirs is capped by these). */
export function scopesOfRole (role: Role): readonly string[] {
  return roleMay(role, 'users.manage') ? ['admin'] : ['posts:write', 'media:write']
}

export function isRole (s: unknown): s is Role {
  return typeof s === 'string' && (ROLES as readonly string[]).includes(s)
}
