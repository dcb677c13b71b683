// Moved to clones/repo-clone.ts; kept only for provision.ts's import while another branch changes
// that file (the next change of provision.ts imports from ../clones/repo-clone and deletes this one).
export * from '../clones/repo-clone';
