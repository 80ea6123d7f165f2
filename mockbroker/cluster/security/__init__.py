"""Security: ACLs and the authorizer, SASL users and SCRAM credentials.

Owns ACL bindings, their image and StandardAuthorizer's decisions, the controller's
ACL and SCRAM records, and the users' credentials that SASL authenticates against.
"""
