"""What the instructor and the students read: feedback pages, the instructor's report, possible
copying, the static review of a submission's code, and the inert notebook Formgrader shows."""
