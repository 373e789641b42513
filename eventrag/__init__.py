"""eventrag"""
