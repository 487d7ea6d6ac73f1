;;; pi-sessions-test.el --- eglot against the real pi-server  -*- lexical-binding: t; -*-

;; Run: emacs --batch -l test/pi-sessions-test.el -f ert-run-tests-batch-and-exit
;; (from editors/emacs; test/run.sh does it).  A temporary HOME holds a copy
;; of pi_server/samples as ~/.pi/agent/sessions, so the recipe's
;; `auto-mode-alist' entry and pi-server's own defaults find it, and
;; `pi-server' is found on PATH as a user's would be ($PI_SERVER_CMD
;; overrides it).  Every answer comes from the server over eglot; the
;; expected titles come from `pi-server tree --json'.

;;; Code:

(require 'package)
(unless (require 'eglot nil t)          ; built in from Emacs 29
  (package-initialize)
  (require 'eglot))
(require 'ert)
(require 'imenu)
(require 'json)
(require 'xref)

(defconst pi-test-dir
  (file-name-directory (or load-file-name buffer-file-name)))
(add-to-list 'load-path (expand-file-name ".." pi-test-dir))
(require 'pi-sessions)

(defconst pi-test-samples
  (expand-file-name "../../../pi_server/samples" pi-test-dir))

(defconst pi-test-home (make-temp-file "pi-emacs-home" t))
(defconst pi-test-sessions (expand-file-name ".pi/agent/sessions" pi-test-home))

(setenv "HOME" pi-test-home)
(setenv "PI_CODING_AGENT_DIR" nil)
(setenv "ANTHROPIC_API_KEY" nil)
(let ((cmd (getenv "PI_SERVER_CMD")))
  (when (and cmd (not (string-empty-p cmd)))
    (setq pi-sessions-server-command (split-string cmd))))

;; A server that cannot start would fail every test with "Server died":
;; say why at once instead.
(let* ((cmd pi-sessions-server-command)
       (code (with-temp-buffer
               (condition-case err
                   (prog1 (apply #'call-process (car cmd) nil t nil
                                 (append (cdr cmd) '("--version")))
                     (setq cmd (cons (buffer-string) cmd)))
                 (file-missing (setq cmd (list (error-message-string err))) 'missing)))))
  (unless (eq code 0)
    (message "cannot start the server: `%s --version' %s:\n%s"
             (mapconcat #'identity pi-sessions-server-command " ")
             (if (eq code 'missing) "could not be run" (format "exited with %s" code))
             (string-trim (car cmd)))
    (kill-emacs 1)))

(make-directory pi-test-sessions t)
(copy-directory (file-name-as-directory pi-test-samples)
                (file-name-as-directory pi-test-sessions) nil t t)

(defun pi-test-file (folder)
  "The one session file in FOLDER under the test's sessions."
  (car (directory-files (expand-file-name folder pi-test-sessions) t "\\.jsonl\\'")))

;; A session with a line that is not JSON and an entry whose parent is
;; missing: what pi-server's diagnostics are for.
(defconst pi-test-broken
  (let* ((dir (expand-file-name "--home-demo-broken--" pi-test-sessions))
         (file (expand-file-name "2026-11-30T10-00-00-000Z_01a22bc0-0000-7000-8000-000000000001.jsonl" dir)))
    (make-directory dir t)
    (with-temp-file file
      (insert "{\"type\":\"session\",\"version\":3,\"id\":\"01a22bc0-0000-7000-8000-000000000001\",\"timestamp\":\"2026-11-30T10:00:00.000Z\",\"cwd\":\"/home/demo/broken\"}\n"
              "{\"type\":\"message\",\"id\":\"aa000001\",\"parentId\":null,\"timestamp\":\"2026-11-30T10:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hello\"}],\"timestamp\":1796032801000}}\n"
              "{\"type\":\"message\",\"id\":\"aa000002\",\"parentId\":\"aa00000\n"
              "{\"type\":\"message\",\"id\":\"aa000003\",\"parentId\":\"ffffffff\",\"timestamp\":\"2026-11-30T10:00:03.000Z\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Orphan\"}],\"timestamp\":1796032803000}}\n"))
    file))

(defun pi-test-wait (what pred &optional seconds)
  "Process output until PRED is true; fail naming WHAT after SECONDS."
  (let ((deadline (+ (float-time) (or seconds 30))))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall pred)
      (ert-fail (format "timed out waiting for %s" what)))))

(defun pi-test-open (file)
  "Visit FILE as a user would and let the recipe connect eglot."
  (let ((old (find-buffer-visiting file)))
    (when old                           ; a fresh visit runs the mode's hook
      (kill-buffer old)))
  (let ((buf (find-file-noselect file)))
    (switch-to-buffer buf)
    (should (eq major-mode 'pi-session-mode))
    ;; `eglot-ensure' connects on the next command: run that hook as the
    ;; command loop would
    (run-hooks 'post-command-hook)
    (pi-test-wait "eglot to manage the buffer" #'eglot-managed-p)
    buf))

(defun pi-test-cli-titles (file)
  "Row titles of `pi-server tree FILE --json --filter all'."
  (let* ((out (with-output-to-string
                (with-current-buffer standard-output
                  (should (eq 0 (apply #'call-process (car pi-sessions-server-command) nil t nil
                                       (append (cdr pi-sessions-server-command)
                                               (list "tree" file "--json" "--filter" "all"))))))))
         (rows (gethash "rows" (json-parse-string out))))
    (mapcar (lambda (r) (gethash "title" r)) rows)))

(defun pi-test-flatten (index)
  "Leaves (NAME . POSITION) of an imenu INDEX."
  (mapcan (lambda (item)
            (if (imenu--subalist-p item)
                (pi-test-flatten (cdr item))
              (list item)))
          index))

(defun pi-test-line-json ()
  (json-parse-string (buffer-substring (line-beginning-position) (line-end-position))))

(ert-deftest pi-sessions-outline-is-imenu ()
  "The outline of a session is imenu's index: one item per entry, at its line."
  (let* ((file (pi-test-file "--home-demo-shop--"))
         (buf (pi-test-open file)))
    (with-current-buffer buf
      (let* ((items (pi-test-flatten (funcall imenu-create-index-function)))
             (names (mapcar #'car items))
             (titles (pi-test-cli-titles file)))
        ;; one item per entry (every line but the session header)
        (should (= (length items) (1- (count-lines (point-min) (point-max)))))
        ;; and every user message pi's /tree draws is among them, by its title
        ;; (tool-only assistant rows are titled differently by the outline)
        (dolist (title (seq-filter (lambda (tt) (string-prefix-p "user: " tt)) titles))
          (should (member (substring title 0 (min 120 (length title))) names)))
        ;; each item sits on its entry's line: a user item on a user message
        (dolist (item items)
          (goto-char (cdr item))
          (let ((entry (pi-test-line-json)))
            (should (gethash "id" entry))
            (when (string-prefix-p "user: " (car item))
              (should (equal "user" (gethash "role" (gethash "message" entry)))))))
        (let ((run (assoc "user: Run the tests." items)))
          (should run)
          (goto-char (cdr run))
          (let ((entry (pi-test-line-json)))
            (should (equal "user" (gethash "role" (gethash "message" entry))))))))))

(ert-deftest pi-sessions-hover-and-definition ()
  "Hover describes the entry at point; go to definition jumps to its parent."
  (let* ((file (pi-test-file "--home-demo-shop--"))
         (buf (pi-test-open file)))
    (with-current-buffer buf
      (goto-char (point-min))
      (forward-line 2)
      (let* ((entry (pi-test-line-json))
             (parent (gethash "parentId" entry))
             (hover nil))
        (should (stringp parent))
        (eglot-hover-eldoc-function (lambda (info &rest _) (setq hover (or info ""))))
        (pi-test-wait "hover" (lambda () hover) 15)
        (should (string-match-p (regexp-quote (gethash "id" entry)) hover))
        (search-forward "\"parentId\"")
        (forward-char 3)
        (xref-find-definitions (xref-backend-identifier-at-point (xref-find-backend)))
        (should (equal parent (gethash "id" (pi-test-line-json))))))))

(ert-deftest pi-sessions-diagnostics-in-flymake ()
  "A malformed line and an orphan entry show up as flymake diagnostics."
  (let ((buf (pi-test-open pi-test-broken)))
    (with-current-buffer buf
      (should (bound-and-true-p flymake-mode))
      (pi-test-wait "diagnostics" (lambda () (>= (length (flymake-diagnostics)) 2)))
      (let ((lines (mapcar (lambda (d) (line-number-at-pos (flymake-diagnostic-beg d)))
                           (flymake-diagnostics))))
        (should (memq 3 lines))          ; not JSON
        (should (memq 4 lines))))))      ; parent missing

(ert-deftest pi-sessions-one-server-for-all-sessions ()
  "Files in different session folders share one pi-server, which answers
eglot's shutdown."
  (let* ((shop (pi-test-open (pi-test-file "--home-demo-shop--")))
         (notes (pi-test-open (pi-test-file "--home-demo-notes--")))
         (server (with-current-buffer shop (eglot-current-server))))
    (should (eq server (with-current-buffer notes (eglot-current-server))))
    (should (equal (file-name-as-directory pi-test-sessions)
                   (cdr (with-current-buffer notes (project-current)))))
    ;; signals if `shutdown' is not answered within the timeout
    (eglot-shutdown server nil 10)
    (should-not (process-live-p (jsonrpc--process server)))))

(add-hook 'kill-emacs-hook
          (lambda ()
            (let ((eglot-autoreconnect nil))
              (ignore-errors (eglot-shutdown-all)))
            (delete-directory pi-test-home t)))

;;; pi-sessions-test.el ends here
