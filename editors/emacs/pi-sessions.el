;;; pi-sessions.el --- pi's session files through pi-server and eglot  -*- lexical-binding: t; -*-

;; Version: 0.1
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, languages

;;; Commentary:

;; pi stores each conversation as a JSONL tree.  pi-server is a language
;; server for those files: started with no subcommand it speaks LSP over
;; stdio and gives, for a session file, the tree outline (document symbols,
;; so `imenu'), diagnostics (malformed lines, orphans, duplicate ids,
;; cycles), hover (what an entry is) and go to definition (an entry's
;; parent).  This file only tells Emacs about it:
;;
;;   - `pi-session-mode', a small major mode for session files, chosen by
;;     `auto-mode-alist' for .jsonl files under pi's session folder;
;;   - an `eglot-server-programs' entry that starts pi-server for it;
;;   - `eglot-ensure' in the mode's hook, so opening a session connects.
;;
;; Use:
;;
;;   (add-to-list 'load-path "/path/to/pi-server/editors/emacs")
;;   (require 'pi-sessions)
;;
;; See README.md next to this file.

;;; Code:

(require 'eglot)
(require 'project)
(require 'seq)

(defgroup pi-sessions nil
  "Session files of pi (the coding agent) through pi-server."
  :group 'tools
  :prefix "pi-sessions-")

(defcustom pi-sessions-server-command '("pi-server")
  "Command that runs pi-server; with no subcommand it serves LSP on stdio.
For example (\"python3\" \"-m\" \"pi_server\") or an absolute path."
  :type '(repeat string))

(defcustom pi-sessions-directories nil
  "Session folders pi-server reads, or nil for the server's default.
The server's default is $PI_CODING_AGENT_DIR/sessions, else
~/.pi/agent/sessions.  When set, they are sent as the `sessionDirs'
initialization option; files outside them get no features."
  :type '(repeat directory))

(defcustom pi-sessions-auto-connect t
  "Whether opening a session file starts eglot (`eglot-ensure')."
  :type 'boolean)

(defun pi-sessions-contact (&optional _interactive)
  "The eglot contact for pi-server: the command and its options."
  (append pi-sessions-server-command
          (when pi-sessions-directories
            (list :initializationOptions
                  (list :sessionDirs
                        (vconcat (mapcar (lambda (d)
                                           (directory-file-name (expand-file-name d)))
                                         pi-sessions-directories)))))))

(defun pi-sessions-roots ()
  "The session folders, as directory names.
They are `pi-sessions-directories', else pi-server's default
\($PI_CODING_AGENT_DIR/sessions or ~/.pi/agent/sessions)."
  (mapcar (lambda (d) (file-name-as-directory (expand-file-name d)))
          (or pi-sessions-directories
              (let ((agent (getenv "PI_CODING_AGENT_DIR")))
                (list (if (and agent (not (string-empty-p agent)))
                          (expand-file-name "sessions" agent)
                        "~/.pi/agent/sessions"))))))

(defun pi-sessions-project (dir)
  "The session root holding DIR, as a transient project, or nil.
A member of `project-find-functions': every session under one root
belongs to it, so one pi-server serves them all instead of one per
project folder."
  (let ((dir (file-name-as-directory (expand-file-name dir))))
    (seq-some (lambda (root)
                (when (string-prefix-p root dir)
                  (cons 'transient root)))
              (pi-sessions-roots))))

;;;###autoload
(add-hook 'project-find-functions #'pi-sessions-project -50)

;;;###autoload
(define-derived-mode pi-session-mode prog-mode "pi-session"
  "Major mode for pi's session files (one JSON entry per line).
Lines are long, so they are not wrapped.  pi appends to the file while a
session runs: the buffer is read-only and follows the file's growth
\(`auto-revert-tail-mode'), so the outline (`imenu') shows new entries."
  (setq-local truncate-lines t)
  (setq-local comment-start nil)
  (setq buffer-read-only t)
  (auto-revert-tail-mode 1)
  (when pi-sessions-auto-connect
    (eglot-ensure)))

;;;###autoload
(add-to-list 'auto-mode-alist
             '("/\\.pi/agent/sessions/.*\\.jsonl\\'" . pi-session-mode))

;;;###autoload
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '(pi-session-mode . pi-sessions-contact)))

(provide 'pi-sessions)
;;; pi-sessions.el ends here
