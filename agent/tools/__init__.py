"""agent.tools"""
