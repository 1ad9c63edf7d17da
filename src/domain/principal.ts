/** Who is asking. Anonymous callers have no principal at all (`null`). */
export interface Principal {
  /** JWT `sub`, or the API key's name. */
  readonly subject: string
  readonly scopes: ReadonlySet<string>
  readonly kind: 'jwt' | 'api-key'
}

export type Viewer = Principal | null

/** `admin` alone permits everything. */
export function isAdmin (viewer: Viewer): boolean {
  return viewer !== null && viewer.scopes.has('admin')
}

export function hasScope (viewer: Viewer, scope: string): boolean {
  return viewer !== null && (viewer.scopes.has(scope) || viewer.scopes.has('admin'))
}

/** The ownership rule every resource shares: its owner or an admin may change it. */
export function mayChange (viewer: Viewer, owner: string): boolean {
  return viewer !== null && (viewer.subject === owner || isAdmin(viewer))
}
