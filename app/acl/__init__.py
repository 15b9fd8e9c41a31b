"""ACLs as Nomad defines them: the policy language (policy.py) and the capability checks a
token's policies grant (capabilities.py). Pure: no database, no Flask, no clock."""
