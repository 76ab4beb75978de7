"""The local schedd: submit language, job store, queries and their layouts, the local
matchmaker and the job's own policy. It sits below startd and never imports it."""
